#!/usr/bin/env python3
# Exports mini_resnet.onnx: a small ResNet (99 training-graph nodes) for CIFAR-size inputs
# (a stem and three basic blocks of 16, 32 and 64 channels) in training mode, the smallest
# residual network on which issue 13's gap shows (docs/BENCHMARKS.md, "Which side of the
# gap is loose"); with --blocks 1 or 2, the stem and the first blocks only (41 and 70 nodes;
# one block is tests/data/onnx/mini_resnet1.onnx). A developer tool (Debian's python3-torch);
# poet imports the file with --onnx.
#   /usr/bin/python3 bench/mini_resnet.py OUT.onnx [--blocks N]
import argparse
import importlib.util
import pathlib

import torch
import torch.nn as nn

# The fixtures' BasicBlock (scripts/export-onnx-fixtures.py), loaded from its file.
_spec = importlib.util.spec_from_file_location(
    "fixtures", pathlib.Path(__file__).resolve().parent.parent / "scripts" / "export-onnx-fixtures.py")
_fixtures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fixtures)
BasicBlock = _fixtures.BasicBlock


class MiniResNet(nn.Module):
    def __init__(self, blocks=3):
        super().__init__()
        shapes = [(16, 16, 1), (16, 32, 2), (32, 64, 2)][:blocks]
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU())
        self.layers = nn.Sequential(*[BasicBlock(i, o, s) for i, o, s in shapes])
        self.fc = nn.Linear(shapes[-1][1], 10)

    def forward(self, x):
        x = self.layers(self.stem(x))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("out", nargs="?", default="mini_resnet.onnx")
    parser.add_argument("--blocks", type=int, choices=[1, 2, 3], default=3)
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.onnx.export(MiniResNet(args.blocks).train(), torch.randn(1, 3, 32, 32), args.out, opset_version=13,
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)
