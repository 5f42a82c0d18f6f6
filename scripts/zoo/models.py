"""The zoo's networks, written with paddle.nn (Paddle 2.6.2), small versions of what Paddle-Lite
users ship. Each entry of ZOO says how to make the dygraph Layer, its inputs, the normalisation
of its natural-image input and whether an int8 twin is made by post-training quantization.
Nothing here is copied from PaddleOCR/PaddleDetection/PaddleClas: the structures follow their
published architecture descriptions (papers and model cards), with random weights.
"""
import paddle
import paddle.nn as nn
import paddle.nn.functional as F

IMAGENET = ([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
OCR = ([0.5, 0.5, 0.5], [0.5, 0.5, 0.5])
UNIT = ([0.0, 0.0, 0.0], [1.0, 1.0, 1.0])


def act_fn(name):
    return {"relu": nn.ReLU, "relu6": nn.ReLU6, "hswish": nn.Hardswish, "hsig": nn.Hardsigmoid,
            "leaky": lambda: nn.LeakyReLU(0.1), "swish": nn.Swish, None: nn.Identity}[name]()


class ConvBN(nn.Layer):
    def __init__(self, cin, cout, k=3, s=1, g=1, act="relu", bias=False):
        super().__init__()
        self.conv = nn.Conv2D(cin, cout, k, s, (k - 1) // 2, groups=g, bias_attr=None if bias else False)
        self.bn = nn.BatchNorm2D(cout)
        self.act = act_fn(act)

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class SE(nn.Layer):
    def __init__(self, c, r=4, gate="hsig"):
        super().__init__()
        self.fc1 = nn.Conv2D(c, max(8, c // r), 1)
        self.fc2 = nn.Conv2D(max(8, c // r), c, 1)
        self.gate = act_fn(gate)

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)
        return x * self.gate(self.fc2(F.relu(self.fc1(s))))


class Classifier(nn.Layer):
    def __init__(self, c, n):
        super().__init__()
        self.fc = nn.Linear(c, n)

    def forward(self, x):
        return F.softmax(self.fc(paddle.flatten(F.adaptive_avg_pool2d(x, 1), 1)))


# ---------------------------------------------------------------- classification backbones

class MobileNetV1(nn.Layer):
    def __init__(self, n=10):
        super().__init__()
        cfg = [(8, 16, 1), (16, 32, 2), (32, 32, 1), (32, 64, 2), (64, 64, 1), (64, 128, 2), (128, 128, 1)]
        layers = [ConvBN(3, 8, 3, 2)]
        for cin, cout, s in cfg:
            layers += [ConvBN(cin, cin, 3, s, cin), ConvBN(cin, cout, 1)]
        self.body = nn.Sequential(*layers)
        self.head = Classifier(128, n)

    def forward(self, x):
        return self.head(self.body(x))


class InvRes(nn.Layer):
    def __init__(self, cin, cout, s, t, k=3, act="relu6", se=False):
        super().__init__()
        mid = cin * t
        self.use_res = s == 1 and cin == cout
        self.expand = ConvBN(cin, mid, 1, act=act) if t != 1 else None
        self.dw = ConvBN(mid, mid, k, s, mid, act=act)
        self.se = SE(mid) if se else None
        self.project = ConvBN(mid, cout, 1, act=None)

    def forward(self, x):
        y = self.expand(x) if self.expand is not None else x
        y = self.dw(y)
        if self.se is not None:
            y = self.se(y)
        y = self.project(y)
        return x + y if self.use_res else y


class MobileNetV2(nn.Layer):
    def __init__(self, n=10):
        super().__init__()
        cfg = [(8, 8, 1, 1), (8, 12, 2, 6), (12, 12, 1, 6), (12, 16, 2, 6), (16, 16, 1, 6), (16, 32, 2, 6),
               (32, 32, 1, 6), (32, 48, 1, 6), (48, 80, 2, 6)]
        self.stem = ConvBN(3, 8, 3, 2, act="relu6")
        self.blocks = nn.Sequential(*[InvRes(a, b, s, t) for a, b, s, t in cfg])
        self.last = ConvBN(80, 160, 1, act="relu6")
        self.head = Classifier(160, n)

    def forward(self, x):
        return self.head(self.last(self.blocks(self.stem(x))))


V3_SMALL = [(3, 16, 16, True, "relu", 2), (3, 16, 24, False, "relu", 2), (3, 24, 24, False, "relu", 1),
            (5, 24, 40, True, "hswish", 2), (5, 40, 40, True, "hswish", 1), (5, 40, 48, True, "hswish", 1),
            (5, 48, 96, True, "hswish", 2), (5, 96, 96, True, "hswish", 1)]
V3_LARGE = [(3, 16, 16, False, "relu", 1), (3, 16, 24, False, "relu", 2), (3, 24, 24, False, "relu", 1),
            (5, 24, 40, True, "relu", 2), (5, 40, 40, True, "relu", 1), (3, 40, 80, False, "hswish", 2),
            (3, 80, 80, False, "hswish", 1), (3, 80, 112, True, "hswish", 1), (5, 112, 160, True, "hswish", 2),
            (5, 160, 160, True, "hswish", 1)]


class V3Block(nn.Layer):
    def __init__(self, k, cin, cout, se, act, s, exp=3):
        super().__init__()
        mid = cin * exp
        self.use_res = s == 1 and cin == cout
        self.expand = ConvBN(cin, mid, 1, act=act)
        self.dw = ConvBN(mid, mid, k, s, mid, act=act)
        self.se = SE(mid) if se else None
        self.project = ConvBN(mid, cout, 1, act=None)

    def forward(self, x):
        y = self.dw(self.expand(x))
        if self.se is not None:
            y = self.se(y)
        y = self.project(y)
        return x + y if self.use_res else y


class MobileNetV3(nn.Layer):
    def __init__(self, cfg, n=10, feats=False):
        super().__init__()
        self.stem = ConvBN(3, 16, 3, 2, act="hswish")
        self.blocks = nn.LayerList([V3Block(*c) for c in cfg])
        self.feats = feats
        c = cfg[-1][2]
        if not feats:
            self.last = ConvBN(c, c * 4, 1, act="hswish")
            self.fc1 = nn.Linear(c * 4, 256)
            self.fc2 = nn.Linear(256, n)
        self.out_ch = [b[2] for b in cfg]

    def forward(self, x):
        x = self.stem(x)
        outs = []
        for b in self.blocks:
            x = b(x)
            outs.append(x)
        if self.feats:
            return outs
        x = paddle.flatten(F.adaptive_avg_pool2d(self.last(x), 1), 1)
        return F.softmax(self.fc2(F.hardswish(self.fc1(x))))


class LCNet(nn.Layer):
    """PP-LCNet: depthwise-separable blocks with hard-swish, SE in the last blocks, a 1x1
    'last conv' after global pooling, fc."""

    def __init__(self, n=10, scale=0.5, out_stride=None):
        super().__init__()
        c = lambda v: max(8, int(v * scale))  # noqa: E731
        cfg = [(3, 16, 32, 1, False), (3, 32, 64, 2, False), (3, 64, 64, 1, False), (3, 64, 128, 2, False),
               (3, 128, 128, 1, False), (3, 128, 256, 2, False), (5, 256, 256, 1, False),
               (5, 256, 512, 2, True), (5, 512, 512, 1, True)]
        self.stem = ConvBN(3, c(16), 3, 2, act="hswish")
        blocks = []
        for k, a, b, s, se in cfg:
            blocks.append(nn.Sequential(ConvBN(c(a), c(a), k, s, c(a), act="hswish"),
                                        SE(c(a)) if se else nn.Identity(), ConvBN(c(a), c(b), 1, act="hswish")))
        self.blocks = nn.LayerList(blocks)
        self.last = nn.Conv2D(c(512), 128, 1)
        self.fc = nn.Linear(128, n)
        self.out_stride = out_stride
        self.out_ch = [c(b) for _, _, b, _, _ in cfg]

    def forward(self, x):
        x = self.stem(x)
        for b in self.blocks:
            x = b(x)
        x = F.hardswish(self.last(F.adaptive_avg_pool2d(x, 1)))
        return F.softmax(self.fc(paddle.flatten(x, 1)))


class ShuffleBlock(nn.Layer):
    def __init__(self, cin, cout, s):
        super().__init__()
        self.s = s
        half = cout // 2
        if s == 2:
            self.b1 = nn.Sequential(ConvBN(cin, cin, 3, 2, cin, act=None), ConvBN(cin, half, 1))
            bin_ = cin
        else:
            bin_ = half
        self.b2 = nn.Sequential(ConvBN(bin_, half, 1), ConvBN(half, half, 3, s, half, act=None), ConvBN(half, half, 1))

    def forward(self, x):
        if self.s == 1:
            a, b = paddle.split(x, 2, axis=1)
            y = paddle.concat([a, self.b2(b)], 1)
        else:
            y = paddle.concat([self.b1(x), self.b2(x)], 1)
        n, c, h, w = y.shape
        y = paddle.reshape(y, [-1, 2, c // 2, h, w])
        y = paddle.transpose(y, [0, 2, 1, 3, 4])
        return paddle.reshape(y, [-1, c, h, w])


class ShuffleNetV2(nn.Layer):
    def __init__(self, n=10):
        super().__init__()
        self.stem = nn.Sequential(ConvBN(3, 16, 3, 2), nn.MaxPool2D(3, 2, 1))
        cfg = [(16, 48, 2), (48, 48, 1), (48, 96, 2), (96, 96, 1), (96, 192, 2), (192, 192, 1)]
        self.blocks = nn.Sequential(*[ShuffleBlock(a, b, s) for a, b, s in cfg])
        self.last = ConvBN(192, 256, 1)
        self.head = Classifier(256, n)

    def forward(self, x):
        return self.head(self.last(self.blocks(self.stem(x))))


class Basic(nn.Layer):
    def __init__(self, cin, cout, s):
        super().__init__()
        self.c1 = ConvBN(cin, cout, 3, s)
        self.c2 = ConvBN(cout, cout, 3, 1, act=None)
        self.short = ConvBN(cin, cout, 1, s, act=None) if (s != 1 or cin != cout) else None

    def forward(self, x):
        sc = self.short(x) if self.short is not None else x
        return F.relu(self.c2(self.c1(x)) + sc)


class Bottleneck(nn.Layer):
    def __init__(self, cin, mid, s):
        super().__init__()
        cout = mid * 4
        self.c1 = ConvBN(cin, mid, 1)
        self.c2 = ConvBN(mid, mid, 3, s)
        self.c3 = ConvBN(mid, cout, 1, act=None)
        self.short = ConvBN(cin, cout, 1, s, act=None) if (s != 1 or cin != cout) else None

    def forward(self, x):
        sc = self.short(x) if self.short is not None else x
        return F.relu(self.c3(self.c2(self.c1(x))) + sc)


class ResNet(nn.Layer):
    def __init__(self, bottleneck=False, n=10):
        super().__init__()
        self.stem = nn.Sequential(ConvBN(3, 16, 7, 2), nn.MaxPool2D(3, 2, 1))
        if bottleneck:
            blocks = [Bottleneck(16, 16, 1), Bottleneck(64, 16, 1), Bottleneck(64, 32, 2), Bottleneck(128, 32, 1),
                      Bottleneck(128, 64, 2)]
            c = 256
        else:
            blocks = [Basic(16, 16, 1), Basic(16, 16, 1), Basic(16, 32, 2), Basic(32, 32, 1), Basic(32, 64, 2),
                      Basic(64, 64, 1), Basic(64, 128, 2)]
            c = 128
        self.blocks = nn.Sequential(*blocks)
        self.head = Classifier(c, n)

    def forward(self, x):
        return self.head(self.blocks(self.stem(x)))


# ---------------------------------------------------------------- OCR

class DBNet(nn.Layer):
    """PP-OCR det (DB): MobileNetV3 backbone, FPN (1x1 in-convs, nearest upsampling + add,
    3x3 out-convs, upsample to 1/4, concat), DB head (conv-BN-ReLU, two stride-2 transposed
    convs, sigmoid). Outputs: the shrink (probability) map and, as a side output, the threshold
    map."""

    def __init__(self):
        super().__init__()
        self.backbone = MobileNetV3(V3_SMALL, feats=True)
        self.taps = [0, 2, 5, 7]  # strides 4 (16ch), 8 (24), 16 (48), 32 (96)
        chans = [self.backbone.out_ch[i] for i in self.taps]
        inner = 32
        self.ins = nn.LayerList([nn.Conv2D(c, inner, 1, bias_attr=False) for c in chans])
        self.outs = nn.LayerList([nn.Conv2D(inner, inner // 4, 3, padding=1, bias_attr=False) for _ in chans])
        self.prob = self._head(inner)
        self.thresh = self._head(inner)

    def _head(self, c):
        return nn.Sequential(ConvBN(c, c // 4, 3), nn.Conv2DTranspose(c // 4, c // 4, 2, 2),
                             nn.BatchNorm2D(c // 4), nn.ReLU(), nn.Conv2DTranspose(c // 4, 1, 2, 2), nn.Sigmoid())

    def forward(self, x):
        feats = self.backbone(x)
        c2, c3, c4, c5 = [feats[i] for i in self.taps]
        i2, i3, i4, i5 = [m(c) for m, c in zip(self.ins, (c2, c3, c4, c5))]
        o4 = i4 + F.interpolate(i5, scale_factor=2, mode="nearest")
        o3 = i3 + F.interpolate(o4, scale_factor=2, mode="nearest")
        o2 = i2 + F.interpolate(o3, scale_factor=2, mode="nearest")
        p5 = F.interpolate(self.outs[3](i5), scale_factor=8, mode="nearest")
        p4 = F.interpolate(self.outs[2](o4), scale_factor=4, mode="nearest")
        p3 = F.interpolate(self.outs[1](o3), scale_factor=2, mode="nearest")
        p2 = self.outs[0](o2)
        fuse = paddle.concat([p5, p4, p3, p2], 1)
        return self.prob(fuse), self.thresh(fuse)


class OCRCls(nn.Layer):
    """PP-OCR direction classifier: a small LCNet/MobileNetV3 backbone, pooling, fc, softmax(2)."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(ConvBN(3, 8, 3, 2, act="hswish"), V3Block(3, 8, 16, True, "relu", 2),
                                  V3Block(3, 16, 24, False, "relu", 2), V3Block(5, 24, 40, True, "hswish", 2),
                                  V3Block(5, 40, 48, True, "hswish", 1), ConvBN(48, 96, 1, act="hswish"))
        self.fc = nn.Linear(96, 2)

    def forward(self, x):
        y = paddle.flatten(F.adaptive_avg_pool2d(self.body(x), 1), 1)
        return F.softmax(self.fc(y))


class CRNNBackbone(nn.Layer):
    """Text-line features: height pooled to 1, width stride 4 (100 px -> 25 steps)."""

    def __init__(self, c=48):
        super().__init__()
        self.body = nn.Sequential(ConvBN(3, 16, 3, 1, act="hswish"), nn.MaxPool2D(2, 2),
                                  ConvBN(16, 16, 3, 1, 16, act="hswish"), ConvBN(16, 32, 1, act="hswish"),
                                  nn.MaxPool2D(2, 2), ConvBN(32, 32, 3, (2, 1), 32, act="hswish"),
                                  ConvBN(32, c, 1, act="hswish"), nn.MaxPool2D((2, 1), (2, 1)),
                                  ConvBN(c, c, 3, (2, 1), c, act="hswish"), ConvBN(c, c, 1, act="hswish"))
        self.c = c

    def forward(self, x):
        y = self.body(x)  # [N, C, 1, W/4]
        y = F.adaptive_avg_pool2d(y, (1, None)) if y.shape[2] != 1 else y
        y = paddle.squeeze(y, axis=2)
        return paddle.transpose(y, [0, 2, 1])  # [N, T, C]


class CRNN(nn.Layer):
    """PP-OCR rec (CRNN): conv features -> LSTM/GRU encoder -> fc -> softmax (CTC).
    Side outputs: the encoder's final states (h, and c for LSTM)."""

    def __init__(self, cell="lstm", layers=2, bidirect=True, hidden=48, classes=37, init_state=False):
        super().__init__()
        self.backbone = CRNNBackbone()
        d = "bidirect" if bidirect else "forward"
        rnn = nn.LSTM if cell == "lstm" else nn.GRU
        self.rnn = rnn(self.backbone.c, hidden, num_layers=layers, direction=d)
        self.cell = cell
        self.init_state = init_state
        nd = 2 if bidirect else 1
        if init_state:
            self.h0 = nn.Linear(self.backbone.c, hidden * layers * nd)
        self.layers, self.nd, self.hidden = layers, nd, hidden
        self.fc = nn.Linear(hidden * nd, classes)

    def forward(self, x):
        seq = self.backbone(x)
        if self.init_state:
            s = paddle.tanh(self.h0(paddle.mean(seq, axis=1)))  # [N, L*D*H]
            s = paddle.transpose(paddle.reshape(s, [-1, self.layers * self.nd, self.hidden]), [1, 0, 2])
            init = (s, s * 0.5) if self.cell == "lstm" else s
            y, st = self.rnn(seq, init)
        else:
            y, st = self.rnn(seq)
        probs = F.softmax(self.fc(y), axis=2)
        if self.cell == "lstm":
            return probs, st[0], st[1]
        return probs, st


class Attention(nn.Layer):
    def __init__(self, d, heads):
        super().__init__()
        self.qkv = nn.Linear(d, d * 3)
        self.proj = nn.Linear(d, d)
        self.h, self.d = heads, d

    def forward(self, x):
        n, t, d = x.shape
        qkv = paddle.reshape(self.qkv(x), [-1, t, 3, self.h, d // self.h])
        qkv = paddle.transpose(qkv, [2, 0, 3, 1, 4])
        q, k, v = qkv[0], qkv[1], qkv[2]
        a = F.softmax(paddle.matmul(q, k, transpose_y=True) * (d // self.h) ** -0.5, axis=-1)
        y = paddle.transpose(paddle.matmul(a, v), [0, 2, 1, 3])
        return self.proj(paddle.reshape(y, [-1, t, d]))


class Block(nn.Layer):
    """Pre-LN transformer block (SVTR's mixing block): x + attn(LN(x)); x + mlp(LN(x))."""

    def __init__(self, d, heads, mlp=2):
        super().__init__()
        self.n1 = nn.LayerNorm(d)
        self.attn = Attention(d, heads)
        self.n2 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, d * mlp)
        self.fc2 = nn.Linear(d * mlp, d)

    def forward(self, x):
        x = x + self.attn(self.n1(x))
        return x + self.fc2(F.gelu(self.fc1(self.n2(x))))


class SVTR(nn.Layer):
    """SVTR-like rec: a conv patch stem (stride 4), global-mixing pre-LN blocks with layer_norm,
    matmul_v2 attention and gelu, a final LayerNorm, height pooling, fc, softmax."""

    def __init__(self, d=32, depth=2, classes=37):
        super().__init__()
        self.stem = nn.Sequential(ConvBN(3, d // 2, 3, 2, act="gelu" if False else "hswish"), ConvBN(d // 2, d, 3, 2))
        self.blocks = nn.LayerList([Block(d, 2) for _ in range(depth)])
        self.norm = nn.LayerNorm(d)
        self.fc = nn.Linear(d, classes)
        self.d = d

    def forward(self, x):
        f = self.stem(x)  # [N, d, 8, 25]
        n, c, h, w = f.shape
        t = paddle.transpose(paddle.flatten(f, 2), [0, 2, 1])  # [N, h*w, d]
        for b in self.blocks:
            t = b(t)
        t = self.norm(t)
        f = paddle.reshape(paddle.transpose(t, [0, 2, 1]), [-1, c, h, w])
        f = F.adaptive_avg_pool2d(f, (1, w))
        seq = paddle.transpose(paddle.squeeze(f, axis=2), [0, 2, 1])
        return F.softmax(self.fc(seq), axis=2)


class Encoder(nn.Layer):
    """paddle.nn.TransformerEncoder over token features (post-LN or pre-LN)."""

    def __init__(self, pre_ln, d=32, layers=2):
        super().__init__()
        self.inp = nn.Linear(16, d)
        layer = nn.TransformerEncoderLayer(d, 2, d * 2, dropout=0.0, activation="gelu", normalize_before=pre_ln)
        self.enc = nn.TransformerEncoder(layer, layers, norm=nn.LayerNorm(d) if pre_ln else None)
        self.out = nn.Linear(d, 8)

    def forward(self, x):
        return self.out(self.enc(self.inp(x)))


# ---------------------------------------------------------------- detection / segmentation / keypoints

class PicoDet(nn.Layer):
    """PicoDet-like: LCNet features at strides 8 and 16, a shared-structure GFL head per level:
    class scores (sigmoid) and a box distribution (softmax over reg_max+1 bins, integral by a
    matmul with the bin positions), flattened and concatenated over levels."""

    def __init__(self, classes=4, reg_max=7):
        super().__init__()
        self.stem = ConvBN(3, 16, 3, 2, act="hswish")
        self.s4 = nn.Sequential(ConvBN(16, 16, 3, 1, 16, act="hswish"), ConvBN(16, 24, 1, act="hswish"))
        self.s8 = nn.Sequential(ConvBN(24, 24, 3, 2, 24, act="hswish"), ConvBN(24, 48, 1, act="hswish"))
        self.s16 = nn.Sequential(ConvBN(48, 48, 5, 2, 48, act="hswish"), SE(48), ConvBN(48, 64, 1, act="hswish"))
        self.s16b = nn.Sequential(ConvBN(64, 64, 5, 2, 64, act="hswish"), ConvBN(64, 64, 1, act="hswish"))
        self.lat = nn.LayerList([ConvBN(64, 32, 1, act="hswish"), ConvBN(64, 32, 1, act="hswish")])
        self.heads = nn.LayerList([nn.Sequential(ConvBN(32, 32, 3, 1, 32, act="hswish"), ConvBN(32, 32, 1, act="hswish"))
                                   for _ in range(2)])
        self.cls = nn.LayerList([nn.Conv2D(32, classes, 1) for _ in range(2)])
        self.reg = nn.LayerList([nn.Conv2D(32, 4 * (reg_max + 1), 1) for _ in range(2)])
        self.reg_max = reg_max
        self.register_buffer("proj", paddle.arange(reg_max + 1, dtype="float32").reshape([reg_max + 1, 1]))

    def forward(self, x):
        c8 = self.s8(self.s4(self.stem(x)))
        c16 = self.s16(c8)
        c32 = self.s16b(c16)
        p16 = self.lat[1](c32)
        p8 = self.lat[0](c16) + F.interpolate(p16, scale_factor=2, mode="nearest")
        scores, dists = [], []
        for i, p in enumerate((p8, p16)):
            f = self.heads[i](p)
            s = F.sigmoid(self.cls[i](f))
            scores.append(paddle.transpose(paddle.flatten(s, 2), [0, 2, 1]))
            r = paddle.transpose(paddle.flatten(self.reg[i](f), 2), [0, 2, 1])  # [N, A, 4*(R+1)]
            r = F.softmax(paddle.reshape(r, [-1, r.shape[1], 4, self.reg_max + 1]), axis=-1)
            dists.append(paddle.squeeze(paddle.matmul(r, self.proj), -1))
        return paddle.concat(scores, 1), paddle.concat(dists, 1)


class YOLO(nn.Layer):
    """YOLOv3/v5-like: a small backbone with leaky/swish, two detection levels. yolo_box=True:
    decoded by paddle.vision.ops.yolo_box (what PaddleDetection's YOLOv3 export contains), outputs
    boxes and scores, and the raw head of level 1 as a side output. Else YOLOv5-style decoding in
    plain ops: sigmoid (xy, objectness, classes), exp (wh) times anchors, plus grid offsets
    (a constant of the fixed input size, as exports hold it), concat."""

    def __init__(self, classes=3, act="leaky", yolo_box=True, size=64):
        super().__init__()
        self.b = nn.Sequential(ConvBN(3, 16, 3, 2, act=act), ConvBN(16, 32, 3, 2, act=act), ConvBN(32, 32, 1, act=act),
                               ConvBN(32, 64, 3, 2, act=act))
        self.b2 = nn.Sequential(ConvBN(64, 96, 3, 2, act=act), ConvBN(96, 96, 1, act=act))
        self.na, self.no, self.classes = 3, 5 + classes, classes
        self.h1 = nn.Conv2D(64, self.na * self.no, 1)
        self.h2 = nn.Conv2D(96, self.na * self.no, 1)
        self.anchors = [[[10, 13], [16, 30], [33, 23]], [[30, 61], [62, 45], [59, 119]]]
        self.yolo_box, self.size = yolo_box, size
        for lvl, stride in enumerate((8, 16)):
            h = w = size // stride
            gy, gx = paddle.meshgrid(paddle.arange(h, dtype="float32"), paddle.arange(w, dtype="float32"))
            self.register_buffer("grid%d" % lvl, paddle.stack([gx, gy], -1).reshape([1, 1, h, w, 2]))
            self.register_buffer("anc%d" % lvl, paddle.to_tensor(self.anchors[lvl], dtype="float32").reshape(
                [1, self.na, 1, 1, 2]))

    def _decode(self, p, stride, lvl):
        n, _, h, w = p.shape
        p = paddle.transpose(paddle.reshape(p, [-1, self.na, self.no, h, w]), [0, 1, 3, 4, 2])
        xy = (F.sigmoid(p[..., 0:2]) + getattr(self, "grid%d" % lvl)) * stride
        wh = paddle.exp(paddle.clip(p[..., 2:4], max=4.0)) * getattr(self, "anc%d" % lvl)
        rest = F.sigmoid(p[..., 4:])
        return paddle.reshape(paddle.concat([xy, wh, rest], -1), [-1, self.na * h * w, self.no])

    def forward(self, x):
        f1 = self.b(x)
        f2 = self.b2(f1)
        p1, p2 = self.h1(f1), self.h2(f2)
        if not self.yolo_box:
            return paddle.concat([self._decode(p1, 8, 0), self._decode(p2, 16, 1)], 1)
        size = paddle.cast(paddle.ones_like(x[:, 0, 0, 0:2]) * self.size, "int32")  # im_shape, [N, 2]
        boxes, scores = [], []
        for p, stride, anc in ((p1, 8, self.anchors[0]), (p2, 16, self.anchors[1])):
            b, s = paddle.vision.ops.yolo_box(p, size, sum(anc, []), self.classes, 0.005, stride, clip_bbox=True)
            boxes.append(b)
            scores.append(s)
        return paddle.concat(boxes, 1), paddle.concat(scores, 1), p1


class SSD(nn.Layer):
    """BlazeFace/SSD-like: box regressions and class scores from two levels, reshape/transpose,
    concat, softmax over classes."""

    def __init__(self):
        super().__init__()
        self.b = nn.Sequential(ConvBN(3, 16, 5, 2), InvRes(16, 16, 1, 2, 5, "relu"), InvRes(16, 24, 2, 2, 5, "relu"),
                               InvRes(24, 32, 2, 2, 5, "relu"))
        self.b2 = nn.Sequential(InvRes(32, 48, 2, 2, 5, "relu"), InvRes(48, 48, 1, 2, 5, "relu"))
        self.loc = nn.LayerList([nn.Conv2D(32, 2 * 4, 3, padding=1), nn.Conv2D(48, 6 * 4, 3, padding=1)])
        self.conf = nn.LayerList([nn.Conv2D(32, 2 * 2, 3, padding=1), nn.Conv2D(48, 6 * 2, 3, padding=1)])

    def forward(self, x):
        f1 = self.b(x)
        f2 = self.b2(f1)
        locs, confs = [], []
        for i, f in enumerate((f1, f2)):
            locs.append(paddle.reshape(paddle.transpose(self.loc[i](f), [0, 2, 3, 1]), [0, -1, 4]))
            confs.append(paddle.reshape(paddle.transpose(self.conf[i](f), [0, 2, 3, 1]), [0, -1, 2]))
        return paddle.concat(locs, 1), F.softmax(paddle.concat(confs, 1), axis=-1)


class Seg(nn.Layer):
    """Segmentation (DeepLab/PP-LiteSeg-like): stride-8 encoder, an ASPP-lite context module
    (dilated convs + image pooling broadcast), bilinear upsampling to the input size, argmax.
    Outputs: the class map (argmax, int64) and the logits."""

    def __init__(self, classes=5, align_corners=False):
        super().__init__()
        self.enc = nn.Sequential(ConvBN(3, 16, 3, 2), InvRes(16, 24, 2, 4), InvRes(24, 24, 1, 4),
                                 InvRes(24, 32, 2, 4), InvRes(32, 32, 1, 4))
        self.a1 = ConvBN(32, 24, 1)
        self.a2 = nn.Sequential(nn.Conv2D(32, 24, 3, padding=2, dilation=2, bias_attr=False), nn.BatchNorm2D(24),
                                nn.ReLU())
        self.pool = ConvBN(32, 24, 1)
        self.fuse = ConvBN(72, 32, 3)
        self.cls = nn.Conv2D(32, classes, 1)
        self.ac = align_corners

    def forward(self, x):
        f = self.enc(x)
        h, w = f.shape[2], f.shape[3]
        g = F.interpolate(self.pool(F.adaptive_avg_pool2d(f, 1)), size=[h, w], mode="bilinear",
                          align_corners=self.ac)
        y = self.cls(self.fuse(paddle.concat([self.a1(f), self.a2(f), g], 1)))
        y = F.interpolate(y, size=[x.shape[2], x.shape[3]], mode="bilinear", align_corners=self.ac)
        return paddle.argmax(y, axis=1), y


class Keypoint(nn.Layer):
    """Top-down keypoint net (SimpleBaseline/TinyPose-like): stride-16 backbone, two stride-2
    transposed convs, a 1x1 heatmap conv; side output: each joint's flat argmax."""

    def __init__(self, joints=8):
        super().__init__()
        self.b = nn.Sequential(ConvBN(3, 16, 3, 2), InvRes(16, 24, 2, 3), InvRes(24, 24, 1, 3),
                               InvRes(24, 48, 2, 3), InvRes(48, 64, 2, 3))
        self.up = nn.Sequential(nn.Conv2DTranspose(64, 32, 4, 2, 1, bias_attr=False), nn.BatchNorm2D(32), nn.ReLU(),
                                nn.Conv2DTranspose(32, 32, 4, 2, 1, bias_attr=False), nn.BatchNorm2D(32), nn.ReLU())
        self.hm = nn.Conv2D(32, joints, 1)

    def forward(self, x):
        hm = self.hm(self.up(self.b(x)))
        return hm, paddle.argmax(paddle.flatten(hm, 2), axis=2)


class Landmark(nn.Layer):
    """Face-landmark regression (PFLD-like): MobileNetV2 blocks, multi-scale pooled features,
    fc to 2*K coordinates."""

    def __init__(self, k=20):
        super().__init__()
        self.b1 = nn.Sequential(ConvBN(3, 16, 3, 2), InvRes(16, 16, 1, 2), InvRes(16, 24, 2, 2))
        self.b2 = nn.Sequential(InvRes(24, 32, 2, 2), InvRes(32, 32, 1, 2))
        self.b3 = ConvBN(32, 64, 3, 2)
        self.fc = nn.Linear(24 + 32 + 64, 2 * k)

    def forward(self, x):
        a = self.b1(x)
        b = self.b2(a)
        c = self.b3(b)
        f = paddle.concat([paddle.flatten(F.adaptive_avg_pool2d(t, 1), 1) for t in (a, b, c)], 1)
        return F.sigmoid(self.fc(f))


# ---------------------------------------------------------------- the zoo

def img(shape, norm=IMAGENET, picture="scene"):
    return {"shape": shape, "norm": norm, "picture": picture}


# name: (family, constructor, input, int8 twin by PTQ)
ZOO = {
    "mobilenet_v1": ("classification", lambda: MobileNetV1(), img([1, 3, 64, 64]), False),
    "mobilenet_v2": ("classification", lambda: MobileNetV2(), img([1, 3, 64, 64]), True),
    "mobilenet_v3_small": ("classification", lambda: MobileNetV3(V3_SMALL), img([1, 3, 64, 64]), False),
    "mobilenet_v3_large": ("classification", lambda: MobileNetV3(V3_LARGE), img([1, 3, 64, 64]), True),
    "pplcnet": ("classification", lambda: LCNet(), img([1, 3, 64, 64]), True),
    "shufflenet_v2": ("classification", lambda: ShuffleNetV2(), img([1, 3, 64, 64]), False),
    "resnet18": ("classification", lambda: ResNet(False), img([1, 3, 64, 64]), True),
    "resnet50": ("classification", lambda: ResNet(True), img([1, 3, 64, 64]), False),
    "ocr_det_db": ("ocr-det", lambda: DBNet(), img([1, 3, 96, 96]), True),
    "ocr_cls": ("ocr-cls", lambda: OCRCls(), img([1, 3, 48, 192], OCR, "textline"), True),
    "rec_lstm1_uni": ("ocr-rec", lambda: CRNN("lstm", 1, False), img([1, 3, 32, 100], OCR, "textline"), False),
    "rec_lstm1_bi": ("ocr-rec", lambda: CRNN("lstm", 1, True), img([1, 3, 32, 100], OCR, "textline"), False),
    "rec_lstm2_uni": ("ocr-rec", lambda: CRNN("lstm", 2, False), img([1, 3, 32, 100], OCR, "textline"), False),
    "rec_lstm2_bi": ("ocr-rec", lambda: CRNN("lstm", 2, True), img([1, 3, 32, 100], OCR, "textline"), True),
    "rec_lstm2_bi_init": ("ocr-rec", lambda: CRNN("lstm", 2, True, init_state=True),
                          img([1, 3, 32, 100], OCR, "textline"), False),
    "rec_gru1_uni": ("ocr-rec", lambda: CRNN("gru", 1, False), img([1, 3, 32, 100], OCR, "textline"), False),
    "rec_gru1_bi": ("ocr-rec", lambda: CRNN("gru", 1, True), img([1, 3, 32, 100], OCR, "textline"), False),
    "rec_gru2_uni": ("ocr-rec", lambda: CRNN("gru", 2, False), img([1, 3, 32, 100], OCR, "textline"), False),
    "rec_gru2_bi": ("ocr-rec", lambda: CRNN("gru", 2, True), img([1, 3, 32, 100], OCR, "textline"), False),
    "rec_svtr": ("ocr-rec", lambda: SVTR(), img([1, 3, 32, 100], OCR, "textline"), False),
    "transformer_post_ln": ("transformer", lambda: Encoder(False), {"shape": [1, 16, 16]}, False),
    "transformer_pre_ln": ("transformer", lambda: Encoder(True), {"shape": [1, 16, 16]}, False),
    "picodet": ("detection", lambda: PicoDet(), img([1, 3, 64, 64]), True),
    "yolo": ("detection", lambda: YOLO(), img([1, 3, 64, 64], UNIT), False),
    "yolo_swish": ("detection", lambda: YOLO(act="swish", yolo_box=False), img([1, 3, 64, 64], UNIT), False),
    "ssd_face": ("detection", lambda: SSD(), img([1, 3, 64, 64], ([0.5] * 3, [0.5] * 3)), False),
    "seg_bilinear": ("segmentation", lambda: Seg(align_corners=False), img([1, 3, 64, 64]), True),
    "seg_bilinear_ac": ("segmentation", lambda: Seg(align_corners=True), img([1, 3, 64, 64]), False),
    "keypoint": ("keypoint", lambda: Keypoint(), img([1, 3, 64, 48]), False),
    "face_landmark": ("keypoint", lambda: Landmark(), img([1, 3, 64, 64]), False),
}
