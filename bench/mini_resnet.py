#!/usr/bin/env python3
# Exports mini_resnet.onnx: a 92-node ResNet for CIFAR-size inputs (a stem and three basic
# blocks of 16, 32 and 64 channels) in training mode, the smallest residual network on which
# issue 13's gap shows (docs/BENCHMARKS.md, "Which side of the gap is loose"). A developer
# tool (Debian's python3-torch); poet imports the file with --onnx.
#   /usr/bin/python3 bench/mini_resnet.py OUT.onnx
import sys

import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.shortcut = None
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = self.b2(self.c2(torch.relu(self.b1(self.c1(x)))))
        return torch.relu(y + (x if self.shortcut is None else self.shortcut(x)))


class MiniResNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU())
        self.layers = nn.Sequential(Block(16, 16, 1), Block(16, 32, 2), Block(32, 64, 2))
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        x = self.layers(self.stem(x))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "mini_resnet.onnx"
    torch.onnx.export(MiniResNet().train(), torch.randn(1, 3, 32, 32), out, opset_version=13,
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)
