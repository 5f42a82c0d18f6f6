/* Small helpers shared by the OpenCL runtime and the op dispatchers. */
#include <stdio.h>
#include "backends/opencl/cl_ops.h"
#include "backends/opencl/loader.h"

const char *cd_cl_variant_name(cd_cl_variant v) {
    switch (v) {
    case CD_CLV_FP32: return "fp32";
    case CD_CLV_FP16: return "fp16";
    case CD_CLV_FP16_COMPUTE: return "fp16-compute";
    }
    return "unknown-variant";
}

const char *cd_cl_err_name(cl_int code) {
    switch (code) {
        /* a table of names, kept as written */
        // clang-format off
#define E(x) case x: return #x;
    E(CL_SUCCESS) E(CL_DEVICE_NOT_FOUND) E(CL_DEVICE_NOT_AVAILABLE) E(CL_COMPILER_NOT_AVAILABLE)
    E(CL_MEM_OBJECT_ALLOCATION_FAILURE) E(CL_OUT_OF_RESOURCES) E(CL_OUT_OF_HOST_MEMORY)
    E(CL_PROFILING_INFO_NOT_AVAILABLE) E(CL_MEM_COPY_OVERLAP) E(CL_IMAGE_FORMAT_MISMATCH)
    E(CL_IMAGE_FORMAT_NOT_SUPPORTED) E(CL_BUILD_PROGRAM_FAILURE) E(CL_MAP_FAILURE)
    E(CL_MISALIGNED_SUB_BUFFER_OFFSET) E(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    E(CL_COMPILE_PROGRAM_FAILURE) E(CL_LINKER_NOT_AVAILABLE) E(CL_LINK_PROGRAM_FAILURE)
    E(CL_DEVICE_PARTITION_FAILED) E(CL_KERNEL_ARG_INFO_NOT_AVAILABLE)
    E(CL_INVALID_VALUE) E(CL_INVALID_DEVICE_TYPE) E(CL_INVALID_PLATFORM) E(CL_INVALID_DEVICE)
    E(CL_INVALID_CONTEXT) E(CL_INVALID_QUEUE_PROPERTIES) E(CL_INVALID_COMMAND_QUEUE)
    E(CL_INVALID_HOST_PTR) E(CL_INVALID_MEM_OBJECT) E(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR)
    E(CL_INVALID_IMAGE_SIZE) E(CL_INVALID_SAMPLER) E(CL_INVALID_BINARY) E(CL_INVALID_BUILD_OPTIONS)
    E(CL_INVALID_PROGRAM) E(CL_INVALID_PROGRAM_EXECUTABLE) E(CL_INVALID_KERNEL_NAME)
    E(CL_INVALID_KERNEL_DEFINITION) E(CL_INVALID_KERNEL) E(CL_INVALID_ARG_INDEX)
    E(CL_INVALID_ARG_VALUE) E(CL_INVALID_ARG_SIZE) E(CL_INVALID_KERNEL_ARGS)
    E(CL_INVALID_WORK_DIMENSION) E(CL_INVALID_WORK_GROUP_SIZE) E(CL_INVALID_WORK_ITEM_SIZE)
    E(CL_INVALID_GLOBAL_OFFSET) E(CL_INVALID_EVENT_WAIT_LIST) E(CL_INVALID_EVENT)
    E(CL_INVALID_OPERATION) E(CL_INVALID_GL_OBJECT) E(CL_INVALID_BUFFER_SIZE)
    E(CL_INVALID_MIP_LEVEL) E(CL_INVALID_GLOBAL_WORK_SIZE) E(CL_INVALID_PROPERTY)
    E(CL_INVALID_IMAGE_DESCRIPTOR) E(CL_INVALID_COMPILER_OPTIONS) E(CL_INVALID_LINKER_OPTIONS)
    E(CL_INVALID_DEVICE_PARTITION_COUNT)
        // clang-format on
#undef E
                                                                                    case -1001
            : return "CL_PLATFORM_NOT_FOUND_KHR";
    default: break;
    }
    static _Thread_local char buf[48];
    snprintf(buf, sizeof buf, "unknown OpenCL error %d", (int)code);
    return buf;
}

cd_status cd_cl_arg(cd_cl_ctx *c, cl_kernel k, cl_uint i, size_t size, const void *val, cd_error *err) {
    cl_int rc = c->cl->clSetKernelArg(k, i, size, val);
    if (rc == CL_SUCCESS) return CD_OK;
    const char *name = c->op && c->op->name ? c->op->name : "?";
    const char *type = c->op && c->op->type ? c->op->type : "?";
    return cd_err(err, CD_E_BACKEND,
                  "op #%d %s (%s): clSetKernelArg(arg %u, %zu bytes) failed: %s (%d); the "
                  "dispatcher passes an argument the kernel does not declare this way (a cldiff bug: "
                  "report it with this message)",
                  c->op_index, name, type, (unsigned)i, size, cd_cl_err_name(rc), (int)rc);
}
