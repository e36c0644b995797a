"""Calibration architectures written by hand in torch (issue 14's list): a YOLOv8-style detector with a DFL head,
a YOLOv5-style anchor head, a UNet, a CRNN (CNN + BiLSTM + CTC head), ESPCN super-resolution, a depthwise-separable
keyword-spotting CNN, a TCN and a convolutional autoencoder. Each builder returns (module, inputs, input names,
output names), like hf_archs."""

from __future__ import annotations


def _nn():
    import torch
    from torch import nn

    torch.manual_seed(0)
    return torch, nn


def _cba(nn, cin, cout, k=3, s=1, act=None):
    return nn.Sequential(nn.Conv2d(cin, cout, k, s, k // 2, bias=False), nn.BatchNorm2d(cout), act or nn.SiLU())


def yolov8_dfl():
    torch, nn = _nn()
    reg_max, nc = 8, 4

    class C2f(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.cv1, self.m, self.cv2 = _cba(nn, c, c, 1), _cba(nn, c // 2, c // 2), _cba(nn, c + c // 2, c, 1)

        def forward(self, x):
            a, b = self.cv1(x).chunk(2, 1)
            return self.cv2(torch.cat((a, b, self.m(b)), 1))

    class Yolo(nn.Module):
        def __init__(self):
            super().__init__()
            self.b1 = nn.Sequential(_cba(nn, 3, 16, 3, 2), _cba(nn, 16, 32, 3, 2), C2f(32))
            self.b2 = nn.Sequential(_cba(nn, 32, 64, 3, 2), C2f(64))
            self.sppf_pool = nn.MaxPool2d(5, 1, 2)
            self.up = nn.Upsample(scale_factor=2, mode="nearest")
            self.neck = C2f(96)
            self.box = nn.ModuleList(nn.Conv2d(c, 4 * reg_max, 1) for c in (96, 64))
            self.cls = nn.ModuleList(nn.Conv2d(c, nc, 1) for c in (96, 64))
            self.register_buffer("proj", torch.arange(reg_max, dtype=torch.float32).view(1, reg_max, 1, 1))

        def forward(self, x):
            p3 = self.b1(x)
            p4 = self.b2(p3)
            p4 = p4 + self.sppf_pool(p4)
            n3 = self.neck(torch.cat((p3, self.up(p4)), 1))
            outs = []
            for f, box, cls in ((n3, self.box[0], self.cls[0]), (p4, self.box[1], self.cls[1])):
                outs.append(torch.cat((box(f), cls(f)), 1).flatten(2))
            y = torch.cat(outs, 2)  # [1, 4*reg_max + nc, anchors]
            b, c = y.split((4 * reg_max, nc), 1)
            # DFL: softmax over reg_max bins per box side, expectation by a fixed 1x1 conv
            d = b.view(1, 4, reg_max, -1).transpose(2, 1).softmax(1)
            d = (d * self.proj).sum(1)
            return torch.cat((d, c.sigmoid()), 1)

    return Yolo().eval(), (torch.randn(1, 3, 64, 64),), ["images"], ["output0"]


def yolov5_anchor():
    torch, nn = _nn()
    na, no = 3, 4 + 1 + 4

    class Yolo(nn.Module):
        def __init__(self):
            super().__init__()
            self.b1 = nn.Sequential(_cba(nn, 3, 16, 6, 2), _cba(nn, 16, 32, 3, 2), _cba(nn, 32, 32, 3, 1))
            self.b2 = nn.Sequential(_cba(nn, 32, 64, 3, 2), _cba(nn, 64, 64, 3, 1))
            self.heads = nn.ModuleList(nn.Conv2d(c, na * no, 1) for c in (32, 64))
            self.register_buffer("anchors", torch.rand(2, 1, na, 1, 1, 2) * 20)

        def forward(self, x):
            f1 = self.b1(x)
            f2 = self.b2(f1)
            z = []
            for i, f in enumerate((f1, f2)):
                p = self.heads[i](f)
                _, _, h, w = p.shape
                p = p.view(1, na, no, h, w).permute(0, 1, 3, 4, 2).sigmoid()
                gy, gx = torch.meshgrid(
                    torch.arange(h, dtype=torch.float32), torch.arange(w, dtype=torch.float32), indexing="ij"
                )
                grid = torch.stack((gx, gy), 2).view(1, 1, h, w, 2)
                xy = (p[..., 0:2] * 2 - 0.5 + grid) * (64 / h)
                wh = (p[..., 2:4] * 2) ** 2 * self.anchors[i]
                z.append(torch.cat((xy, wh, p[..., 4:]), -1).view(1, -1, no))
            return torch.cat(z, 1)

    return Yolo().eval(), (torch.randn(1, 3, 64, 64),), ["images"], ["output0"]


def unet():
    torch, nn = _nn()

    def dbl(ci, co):
        return nn.Sequential(_cba(nn, ci, co, act=nn.ReLU()), _cba(nn, co, co, act=nn.ReLU()))

    class UNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.d1, self.d2, self.d3 = dbl(3, 16), dbl(16, 32), dbl(32, 64)
            self.pool = nn.MaxPool2d(2)
            self.u2, self.c2 = nn.ConvTranspose2d(64, 32, 2, 2), dbl(64, 32)
            self.u1, self.c1 = nn.ConvTranspose2d(32, 16, 2, 2), dbl(32, 16)
            self.head = nn.Conv2d(16, 2, 1)

        def forward(self, x):
            a = self.d1(x)
            b = self.d2(self.pool(a))
            c = self.d3(self.pool(b))
            b = self.c2(torch.cat((self.u2(c), b), 1))
            return self.head(self.c1(torch.cat((self.u1(b), a), 1)))

    return UNet().eval(), (torch.randn(1, 3, 64, 64),), ["images"], ["mask"]


def crnn():
    torch, nn = _nn()

    class CRNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.cnn = nn.Sequential(
                _cba(nn, 1, 16, act=nn.ReLU()),
                nn.MaxPool2d(2),
                _cba(nn, 16, 32, act=nn.ReLU()),
                nn.MaxPool2d(2),
                _cba(nn, 32, 32, act=nn.ReLU()),
                nn.MaxPool2d((2, 1)),
            )
            self.rnn = nn.LSTM(32 * 4, 32, bidirectional=True, batch_first=True)
            self.ctc = nn.Linear(64, 11)

        def forward(self, x):
            f = self.cnn(x)  # [1, 32, 4, 32]
            f = f.permute(0, 3, 1, 2).flatten(2)  # [1, T=32, 128]
            y, _ = self.rnn(f)
            return self.ctc(y).log_softmax(-1)

    return CRNN().eval(), (torch.randn(1, 1, 32, 128),), ["image"], ["log_probs"]


def espcn():
    torch, nn = _nn()
    r = 3
    m = nn.Sequential(
        nn.Conv2d(1, 32, 5, padding=2),
        nn.Tanh(),
        nn.Conv2d(32, 16, 3, padding=1),
        nn.Tanh(),
        nn.Conv2d(16, r * r, 3, padding=1),
        nn.PixelShuffle(r),
    )
    return m.eval(), (torch.randn(1, 1, 32, 32),), ["image"], ["upscaled"]


def kws_dscnn():
    torch, nn = _nn()

    def ds(c):
        return nn.Sequential(
            nn.Conv2d(c, c, 3, 1, 1, groups=c, bias=False),
            nn.BatchNorm2d(c),
            nn.ReLU(),
            nn.Conv2d(c, c, 1, bias=False),
            nn.BatchNorm2d(c),
            nn.ReLU(),
        )

    m = nn.Sequential(
        nn.Conv2d(1, 32, (10, 4), (2, 2), (5, 1)),
        nn.BatchNorm2d(32),
        nn.ReLU(),
        ds(32),
        ds(32),
        ds(32),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(32, 12),
    )
    return m.eval(), (torch.randn(1, 1, 49, 10),), ["mfcc"], ["logits"]


def tcn():
    torch, nn = _nn()

    class Block(nn.Module):
        def __init__(self, ci, co, d):
            super().__init__()
            self.pad = 2 * d
            self.c1, self.c2 = nn.Conv1d(ci, co, 3, dilation=d), nn.Conv1d(co, co, 3, dilation=d)
            self.skip = nn.Conv1d(ci, co, 1) if ci != co else nn.Identity()

        def forward(self, x):
            y = torch.relu(self.c1(nn.functional.pad(x, (self.pad, 0))))
            y = torch.relu(self.c2(nn.functional.pad(y, (self.pad, 0))))
            return torch.relu(y + self.skip(x))

    class TCN(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.Sequential(Block(8, 32, 1), Block(32, 32, 2), Block(32, 32, 4))
            self.head = nn.Linear(32, 3)

        def forward(self, x):  # [1, T, F]
            y = self.blocks(x.transpose(1, 2))
            return self.head(y[:, :, -1])

    return TCN().eval(), (torch.randn(1, 64, 8),), ["series"], ["forecast"]


def autoencoder():
    torch, nn = _nn()

    class AE(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = nn.Sequential(
                nn.Conv2d(1, 16, 3, 2, 1),
                nn.ReLU(),
                nn.Conv2d(16, 32, 3, 2, 1),
                nn.ReLU(),
                nn.Flatten(),
                nn.Linear(32 * 8 * 8, 32),
                nn.ReLU(),
                nn.Linear(32, 32 * 8 * 8),
            )
            self.dec = nn.Sequential(
                nn.ConvTranspose2d(32, 16, 4, 2, 1), nn.ReLU(), nn.ConvTranspose2d(16, 1, 4, 2, 1), nn.Sigmoid()
            )

        def forward(self, x):
            return self.dec(self.enc(x).view(1, 32, 8, 8))

    return AE().eval(), (torch.randn(1, 1, 32, 32),), ["image"], ["reconstruction"]
