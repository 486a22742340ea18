#!/usr/bin/python3
"""Writes the ONNX fixtures poet's importer is held to (tests/data/onnx/).

A developer tool, not needed to build or test poet: it needs Debian's python3-torch,
python3-torchvision and python3-onnx (apt-get install -y python3-torch python3-torchvision
python3-onnx), and /usr/bin/python3, which those packages install into.

For each small model (weights included) it writes NAME.onnx and NAME.json: a fixed input
and labels, PyTorch's logits in eval mode, and PyTorch's loss and parameter gradients
(by initializer name, in the file's layout) after one forward and backward in training
mode, with mean cross-entropy - what poet's one training step computes. Large torchvision
models are written structure-only: their initializers keep their dimensions but not their
data, enough to plan, and the JSON holds PyTorch's parameter count.

A model on token ids (tiny_bert) has integer ids as its JSON input and "input_kind": "token_ids".

Usage: scripts/export-onnx-fixtures.py [OUT_DIR]   (default: tests/data/onnx)
"""
import json
import os
import sys

import onnx
import onnx.numpy_helper
import torch
import torch.nn as nn
import torchvision

BATCH = 2


class TinyCNN(nn.Module):
    """Convolution (strided, padded, grouped), ReLU, ReLU6, Sigmoid, Tanh, both poolings."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, stride=1, padding=1)
        self.pool1 = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=2, bias=False)
        self.act2 = nn.ReLU6()
        self.pool2 = nn.AvgPool2d(2, 2)
        self.fc1 = nn.Linear(8 * 2 * 2, 16)
        self.fc2 = nn.Linear(16, 5)

    def forward(self, x):
        x = self.pool1(torch.relu(self.conv1(x)))
        x = self.pool2(self.act2(self.conv2(x)))
        x = torch.flatten(x, 1)
        x = torch.tanh(self.fc1(x))
        return self.fc2(torch.sigmoid(x))


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + (self.down(x) if self.down is not None else x))


class TinyResNet(nn.Module):
    """A ResNet in miniature: batch norm, residual adds, a downsampling shortcut."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(8, eps=1e-3)  # as torchvision's Inception and MobileNetV3
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        self.layer1 = BasicBlock(8, 8, 1)
        self.layer2 = BasicBlock(8, 16, 2)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = self.maxpool(torch.relu(self.bn1(self.conv1(x))))
        x = self.layer2(self.layer1(x))
        x = nn.functional.adaptive_avg_pool2d(x, 1)
        return self.fc(x.reshape(x.shape[0], -1))


class TinyMLP(nn.Module):
    """Linear layers on a sequence (MatMul + Add), layer norm, and a reshape to features."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 16)
        self.norm = nn.LayerNorm(16)
        self.head = nn.Linear(4 * 16, 3)

    def forward(self, x):
        x = self.norm(torch.relu(self.proj(x)))
        return self.head(x.reshape(x.shape[0], -1))


class TinyFashion(nn.Module):
    """A classifier of Fashion-MNIST's 1x28x28 pictures (pooled, then linear): an ONNX model the real dataset fits."""

    def __init__(self):
        super().__init__()
        self.pool = nn.AvgPool2d(4)
        self.fc = nn.Linear(49, 10)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(x), 1))


class TinyInception(nn.Module):
    """Branches concatenated along the channels, one of them average-pooled with padding, as in Inception."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 4, 3, 1, 1)
        self.branch1 = nn.Conv2d(4, 3, 1)
        self.branch3 = nn.Conv2d(4, 5, 3, 1, 1)
        self.fc = nn.Linear(3 + 5 + 4, 4)

    def forward(self, x):
        x = torch.relu(self.stem(x))
        # The pooled branch: torch writes count_include_pad's padding as a Pad before the pool.
        pooled = nn.functional.avg_pool2d(x, 3, stride=1, padding=1)
        x = torch.relu(torch.cat([self.branch1(x), self.branch3(x), pooled], 1))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


class TinyTransformer(nn.Module):
    """torch.nn.TransformerEncoder (batch first, post-norm, ReLU) on a sequence, then a linear head: Transpose,
    Slice, Reshape, attention's scale (Div), and layer norm decomposed (ReduceMean, Sub, Pow, Sqrt) at opset 13."""

    def __init__(self, dropout=0.0):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d_model=16, nhead=2, dim_feedforward=32, dropout=dropout, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2)
        self.head = nn.Linear(5 * 16, 3)

    def forward(self, x):
        x = self.encoder(x)
        return self.head(x.reshape(x.shape[0], -1))


class TinyMobileNetV3(nn.Module):
    """MobileNetV3's pieces: hardswish (HardSigmoid and Mul at opset 13), squeeze-and-excitation (a Conv on global
    pooling, hardsigmoid, Mul broadcast over the image), a depthwise convolution."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1, bias=False), nn.BatchNorm2d(8), nn.Hardswish())
        self.depthwise = nn.Sequential(nn.Conv2d(8, 8, 3, 1, 1, groups=8, bias=False), nn.BatchNorm2d(8), nn.ReLU())
        self.se = torchvision.ops.SqueezeExcitation(8, 4, scale_activation=nn.Hardsigmoid)
        self.fc = nn.Linear(8, 5)

    def forward(self, x):
        x = self.se(self.depthwise(self.stem(x)))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


class TinyConvNeXt(nn.Module):
    """The pieces of the torchvision models that imported last: SqueezeNet's and GoogLeNet's max-pool with ceil_mode
    adding a partial window, ConvNeXt's block (depthwise 7x7 Conv, channels-last layer norm and MLP, the layer
    scale: a Mul by a learned [C, 1, 1] tensor), Swin's torch.roll (Slice and Concat along the rows and the
    columns), a Sub of two activations, a Split, and a dilated grouped Conv."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, 1, 1)
        self.pool = nn.MaxPool2d(3, 2, ceil_mode=True)  # 8x8 -> 4x4: the last window overhangs
        self.dilated = nn.Conv2d(8, 8, 3, 1, 2, dilation=2, groups=2)
        self.depthwise = nn.Conv2d(8, 8, 7, 1, 3, groups=8)
        self.norm = nn.LayerNorm(8, eps=1e-6)
        self.mlp = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 8))
        self.layer_scale = nn.Parameter(torch.full((8, 1, 1), 0.5))
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        x = self.pool(torch.relu(self.stem(x)))
        x = x + torch.relu(self.dilated(x))
        y = self.depthwise(x).permute(0, 2, 3, 1)
        y = self.mlp(self.norm(y)).permute(0, 3, 1, 2)
        x = x + self.layer_scale * y
        x = torch.roll(x, shifts=(1, -1), dims=(2, 3)) - torch.sigmoid(x)
        a, b = x.split([3, 5], dim=1)
        x = torch.cat([b, torch.tanh(a)], dim=1)
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


class TinySeqFirstTransformer(nn.Module):
    """nn.TransformerEncoder with batch_first=False: its input is [seq, batch, dim], classified by the first position's
    row. poet feeds the batch as the input's first axis, so it must refuse this model, not import it with the file's
    batch in place of its own."""

    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d_model=16, nhead=2, dim_feedforward=32, dropout=0.0)
        self.encoder = nn.TransformerEncoder(layer, num_layers=1)
        self.head = nn.Linear(16, 3)

    def forward(self, x):
        return self.head(self.encoder(x)[0])


class TinyBert(nn.Module):
    """A BERT-style encoder on token ids: nn.Embedding (a Gather of the table's rows by the integer input), a learned
    position embedding (Add), nn.TransformerEncoder (batch first, GELU, pre-norm), and a head on the first token's
    row (Gather at index 0), as BERT classifies by its [CLS] token. The embedding is scaled by sqrt(d_model) as in
    "Attention is all you need" (a Mul by a constant), and the encoder's output divided by a temperature computed
    from it (a Div of two activations, the divisor broadcast) to hold poet's div to PyTorch."""

    VOCAB, SEQ, DIM = 20, 6, 16

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(self.VOCAB, self.DIM)
        self.position = nn.Parameter(torch.zeros(1, self.SEQ, self.DIM))
        layer = nn.TransformerEncoderLayer(d_model=self.DIM, nhead=2, dim_feedforward=32, dropout=0.0,
                                           activation="gelu", batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2)
        self.temperature = nn.Linear(self.DIM, 1)
        self.head = nn.Linear(self.DIM, 3)

    def forward(self, ids):
        x = self.embed(ids) * self.DIM ** 0.5 + self.position
        x = self.encoder(x)
        # Divided by a positive temperature of each token: [B, S, D] by [B, S, 1], broadcast over the features.
        x = x / (torch.sigmoid(self.temperature(x)) + 0.5)
        return self.head(x[:, 0])


class TinyEinsum(nn.Module):
    """MaxViT's attention written with torch.einsum (ONNX Einsum): the scores 'bghid,bghjd->bghij', the weighted
    values 'bghij,bghjd->bghid', and the same product with its output axes permuted ('bghij,bghjd->bgihd')."""

    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(8, 24)
        self.head = nn.Linear(2 * 4 * 8, 3)

    def forward(self, x):  # [B, G = 2 groups, S = 4 tokens, 8]
        b = x.shape[0]
        q, k, v = self.qkv(x).reshape(b, 2, 4, 3, 2, 4).permute(3, 0, 1, 4, 2, 5)  # each [B, G, H = 2, S, 4]
        a = torch.softmax(torch.einsum("bghid,bghjd->bghij", q, k) * 0.5, dim=-1)
        y = torch.einsum("bghij,bghjd->bghid", a, v).transpose(2, 3) + torch.einsum("bghij,bghjd->bgihd", a, v)
        return self.head(y.reshape(b, -1))


class TinyLeaky(nn.Module):
    """LeakyReLU at torch's default slope (0.01) and at 0.2, as detectors and GANs use it."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 8, 3, stride=2, padding=1)
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        x = nn.functional.leaky_relu(self.conv1(x))
        x = nn.functional.leaky_relu(self.conv2(x), 0.2)
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


class TinyUpsample(nn.Module):
    """Nearest upsampling as a U-Net's decoder uses it: nn.Upsample(scale_factor=2) (Resize by scales) beside a skip
    connection, then interpolate to a size (Resize by sizes: the columns x3), read by a linear layer position by
    position."""

    def __init__(self):
        super().__init__()
        self.down = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.skip = nn.Conv2d(3, 8, 1)
        self.mix = nn.Conv2d(8, 4, 3, padding=1)
        self.fc = nn.Linear(4 * 8 * 24, 3)

    def forward(self, x):
        y = self.up(torch.relu(self.down(x))) + self.skip(x)
        y = nn.functional.interpolate(self.mix(y), size=(8, 24), mode="nearest")
        return self.fc(torch.flatten(y, 1))


class TinyBilinear(nn.Module):
    """Bilinear upsampling as segmentation decoders use it (align_corners=False): nn.Upsample(scale_factor=2,
    mode="bilinear") beside a skip connection, then interpolate to a size (rows x2, columns x3)."""

    def __init__(self):
        super().__init__()
        self.down = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
        self.skip = nn.Conv2d(3, 8, 1)
        self.mix = nn.Conv2d(8, 4, 3, padding=1)
        self.fc = nn.Linear(4 * 16 * 24, 3)

    def forward(self, x):
        y = self.up(torch.relu(self.down(x))) + self.skip(x)
        y = nn.functional.interpolate(self.mix(y), size=(16, 24), mode="bilinear", align_corners=False)
        return self.fc(torch.flatten(y, 1))


class TinyGroupNorm(nn.Module):
    """GroupNorm (4 groups of 2 channels: Reshape, InstanceNormalization, Reshape, Mul, Add) and InstanceNorm2d with
    its affine scale and bias, the norms of small-batch training."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.group = nn.GroupNorm(4, 8, eps=1e-3)
        self.conv2 = nn.Conv2d(8, 6, 3, stride=2, padding=1, bias=False)
        self.instance = nn.InstanceNorm2d(6, affine=True)
        self.fc = nn.Linear(6 * 4 * 4, 3)

    def forward(self, x):
        x = torch.relu(self.group(self.conv1(x)))
        x = torch.relu(self.instance(self.conv2(x)))
        return self.fc(torch.flatten(x, 1))


class TinyFixedNorms(nn.Module):
    """Each norm without a learned scale and shift (affine=False): InstanceNorm2d's default, GroupNorm, BatchNorm2d
    and LayerNorm (at opset 13 its decomposition, ending at the Div)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1, bias=False)  # the norm would cancel a bias: its gradient is 0
        self.instance = nn.InstanceNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 3, stride=2, padding=1)
        self.group = nn.GroupNorm(4, 8, affine=False)
        self.conv3 = nn.Conv2d(8, 6, 3, padding=1, bias=False)
        self.batch = nn.BatchNorm2d(6, affine=False)
        self.fc1 = nn.Linear(6 * 4 * 4, 16)
        self.layer = nn.LayerNorm(16, elementwise_affine=False)
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x):
        x = torch.relu(self.instance(self.conv1(x)))
        x = torch.relu(self.group(self.conv2(x)))
        x = torch.relu(self.batch(self.conv3(x)))
        return self.fc2(torch.relu(self.layer(self.fc1(torch.flatten(x, 1)))))


class TinyDecoder(nn.Module):
    """An autoencoder's decoder upsamples by transposed convolutions: ConvTranspose2d with output_padding, grouped
    (4x4, stride 2), dilated without a bias, and a ConvTranspose1d over a signal."""

    def __init__(self):
        super().__init__()
        self.enc1 = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.enc2 = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.dec1 = nn.ConvTranspose2d(16, 8, 3, stride=2, padding=1, output_padding=1)
        self.dec2 = nn.ConvTranspose2d(8, 4, 4, stride=2, padding=1, groups=2)
        self.dec3 = nn.ConvTranspose2d(4, 4, 3, padding=2, dilation=2, bias=False)
        self.signal = nn.ConvTranspose1d(4, 2, 3, stride=2, padding=1, output_padding=1)
        self.fc = nn.Linear(2 * 128, 3)

    def forward(self, x):
        x = torch.relu(self.enc2(torch.relu(self.enc1(x))))
        x = torch.relu(self.dec2(torch.relu(self.dec1(x))))
        x = torch.relu(self.dec3(x))  # [N, 4, 8, 8]
        x = self.signal(torch.flatten(x, 2))  # [N, 4, 64] -> [N, 2, 128]
        return self.fc(torch.flatten(x, 1))


class TinyConv1d(nn.Module):
    """A keyword-spotting-like network over a signal [N, 4, 32]: Conv1d (strided, padded), BatchNorm1d, MaxPool1d, a
    dilated depthwise Conv1d, AvgPool1d with padding (Pad then AveragePool), a pointwise Conv1d and a linear layer
    reading each position."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv1d(4, 8, 5, stride=2, padding=2)
        self.norm = nn.BatchNorm1d(8)
        self.pool1 = nn.MaxPool1d(2)
        self.depthwise = nn.Conv1d(8, 8, 3, padding=2, dilation=2, groups=8)
        self.pool2 = nn.AvgPool1d(3, stride=2, padding=1)
        self.pointwise = nn.Conv1d(8, 6, 1)
        self.fc = nn.Linear(6 * 4, 3)

    def forward(self, x):
        x = self.pool1(torch.relu(self.norm(self.conv1(x))))
        x = self.pointwise(self.pool2(torch.relu(self.depthwise(x))))
        return self.fc(torch.flatten(x, 1))


class TinySignal(nn.Module):
    """ELU (alpha 1 and 0.5) and Softplus over a signal [N, 4, 16], then its mean over the length (x.mean(2): a
    ReduceMean) read by a linear layer."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv1d(4, 8, 3, padding=1)
        self.conv2 = nn.Conv1d(8, 8, 3, padding=1)
        self.conv3 = nn.Conv1d(8, 6, 3, padding=1)
        self.fc = nn.Linear(6, 3)

    def forward(self, x):
        x = nn.functional.elu(self.conv1(x))
        x = nn.functional.elu(self.conv2(x), 0.5)
        return self.fc(nn.functional.softplus(self.conv3(x)).mean(2))


class TinyPRelu(nn.Module):
    """PReLU with a slope per channel after a convolution (nn.PReLU(4): torch writes the slopes [4, 1, 1]), one slope
    for all after the next (nn.PReLU(): [1, 1, 1]) and a slope per feature after a linear layer ([8])."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, padding=1)
        self.act1 = nn.PReLU(4)
        self.conv2 = nn.Conv2d(4, 4, 3, stride=2, padding=1)
        self.act2 = nn.PReLU()
        self.fc1 = nn.Linear(4 * 4 * 4, 8)
        self.act3 = nn.PReLU(8)
        self.fc2 = nn.Linear(8, 3)

    def forward(self, x):
        x = self.act2(self.conv2(self.act1(self.conv1(x))))
        return self.fc2(self.act3(self.fc1(x.flatten(1))))


class TinySpectrogram(nn.Module):
    """An audio CNN over a spectrogram [N, 1, 16 bands, 12 frames] whose strides differ between the axes: a Conv2d of
    stride (2, 1), MaxPool2d((1, 2)), a (3, 1) Conv2d of stride (1, 2), AvgPool2d((2, 1)), a ConvTranspose2d of stride
    (2, 1) and a depthwise Conv2d of stride (1, 2)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, stride=(2, 1), padding=1)
        self.norm = nn.BatchNorm2d(4)
        self.pool1 = nn.MaxPool2d((1, 2))
        self.conv2 = nn.Conv2d(4, 6, (3, 1), stride=(1, 2), padding=(1, 0))
        self.pool2 = nn.AvgPool2d((2, 1))
        self.up = nn.ConvTranspose2d(6, 4, 3, stride=(2, 1), padding=1, output_padding=(1, 0))
        self.depthwise = nn.Conv2d(4, 4, 3, stride=(1, 2), padding=1, groups=4)
        self.fc = nn.Linear(4 * 8 * 2, 3)

    def forward(self, x):
        x = self.pool1(torch.relu(self.norm(self.conv1(x))))
        x = self.pool2(torch.relu(self.conv2(x)))
        x = self.depthwise(torch.relu(self.up(x)))
        return self.fc(x.flatten(1))


class TinyTfPadding(nn.Module):
    """Layers padded unevenly, as TensorFlow's SAME pads an even size: torch's ZeroPad2d before a Conv2d (ConstantPad2d
    of -inf before a MaxPool2d), which the fixture's file then carries in the layer as TensorFlow's exporters write it
    (fold_pads_as_tensorflow_does): auto_pad SAME_UPPER for the stride-2 convolution, pads [0, 0, 1, 1] for the 3x3
    stride-2 max pool, pads [top 0, left 1, bottom 1, right 2] for the 2x4 convolution."""

    def __init__(self):
        super().__init__()
        self.pad1 = nn.ZeroPad2d((0, 1, 0, 1))
        self.conv1 = nn.Conv2d(3, 4, 3, stride=2)
        self.pad_pool = nn.ConstantPad2d((0, 1, 0, 1), float("-inf"))
        self.pool = nn.MaxPool2d(3, 2)
        self.pad2 = nn.ZeroPad2d((1, 2, 0, 1))
        self.conv2 = nn.Conv2d(4, 6, (2, 4))
        self.fc = nn.Linear(6 * 2 * 2, 3)

    def forward(self, x):
        x = self.pool(self.pad_pool(torch.relu(self.conv1(self.pad1(x)))))
        x = torch.relu(self.conv2(self.pad2(x)))
        return self.fc(x.flatten(1))


class TinyAutoencoder(nn.Module):
    """An autoencoder (anomaly detection's) trained to reconstruct its input [N, 1, 8, 8]: a strided Conv2d and a
    linear bottleneck of 16, then a linear layer, a reshape and a ConvTranspose2d back to the input's shape; trained
    with --loss reconstruction (the mean squared error against the input)."""

    def __init__(self):
        super().__init__()
        self.encode = nn.Conv2d(1, 4, 3, stride=2, padding=1)
        self.bottleneck = nn.Linear(4 * 4 * 4, 16)
        self.expand = nn.Linear(16, 4 * 4 * 4)
        self.decode = nn.ConvTranspose2d(4, 1, 3, stride=2, padding=1, output_padding=1)

    def forward(self, x):
        code = torch.relu(self.bottleneck(torch.relu(self.encode(x)).flatten(1)))
        return self.decode(torch.relu(self.expand(code)).view(x.size(0), 4, 4, 4))


def reconstruction_loss(output, x, labels):
    return nn.functional.mse_loss(output.reshape(x.shape), x)


def fold_pads_as_tensorflow_does(layer_settings):
    """A rewrite for write_fixture: each Pad that feeds a Conv or MaxPool is removed, and the layer pads instead, with
    the next of layer_settings ({"auto_pad": ...} or {"pads": [...]}): what TensorFlow's exporters write for torch's
    Pad + Conv."""

    def rewrite(path):
        m = onnx.load(path)
        g = m.graph
        pads = {n.output[0]: n for n in g.node if n.op_type == "Pad"}
        settings = iter(layer_settings)
        for conv in [n for n in g.node if n.op_type in ("Conv", "MaxPool") and n.input[0] in pads]:
            pad = pads[conv.input[0]]
            conv.input[0] = pad.input[0]
            g.node.remove(pad)
            kept = [a for a in conv.attribute if a.name != "pads"]
            del conv.attribute[:]
            conv.attribute.extend(kept)
            for key, value in next(settings).items():
                conv.attribute.append(onnx.helper.make_attribute(key, value))
        while True:  # the nodes that computed the Pads' pads, now read by none
            read = {i for n in g.node for i in n.input} | {o.name for o in g.output}
            unread = [n for n in g.node if not any(o in read for o in n.output)]
            if not unread:
                break
            for n in unread:
                g.node.remove(n)
        onnx.checker.check_model(m)
        onnx.save(m, path)

    return rewrite


def write_token_fixture(name, make_model, out_dir, opset=13):
    """As write_fixture, for a model whose input is token ids: the JSON's input holds the ids (integers)."""
    torch.manual_seed(1234)
    model = make_model()
    gen = torch.Generator().manual_seed(1234)
    randomize_norms(model, gen)
    perturb_parameters(model, gen)
    ids = torch.randint(0, model.VOCAB, (BATCH, model.SEQ), generator=gen)
    ids[0, :3] = 7  # a repeated id: its row's gradient is a sum (scatter-add)
    labels = torch.randint(0, 3, (BATCH,), generator=gen)
    path = os.path.join(out_dir, name + ".onnx")
    export(model, ids, path, opset)
    reference_outputs(name, model, ids, labels, path, out_dir, token_ids=True)


def write_seq_first(out_dir):
    """Structure only, twice: the sequence axis named the batch (a mistake poet must catch: the logits' rows stay the
    file's batch, here BATCH), and the batch axis named as it is (the second axis varies)."""
    torch.manual_seed(1234)
    model = TinySeqFirstTransformer().eval()
    for name, axis in (("tiny_transformer_seq_first", 0), ("tiny_transformer_seq_first_batch_axis_1", 1)):
        path = os.path.join(out_dir, name + ".onnx")
        torch.onnx.export(model, torch.rand(5, BATCH, 16), path, opset_version=13, input_names=["input"],
                          output_names=["logits"], dynamic_axes={"input": {axis: "batch"}})
        strip_weights(path)


def tiny_vit():
    """torchvision's VisionTransformer in miniature: patches by a strided Conv, the class token (Expand, Concat),
    the position embedding (Add), GELU through Erf, layer norm with epsilon 1e-6, the class token's row (Gather)."""
    return torchvision.models.VisionTransformer(image_size=8, patch_size=4, num_layers=2, num_heads=2, hidden_dim=8,
                                                mlp_dim=16, num_classes=4)


def tiny_swin():
    """torchvision's SwinTransformer in miniature (8x8 images, 2x2 patches, 2x2 windows): the shifted windows'
    attention mask, which the file computes from constants (Range, ScatterND, Slice, Transpose, Sub, Equal, Where)
    and adds fixed; the relative position bias gathered from its learned table by a constant index; patch merging's
    Slice with step 2; torch.roll. Exported with do_constant_folding=False, which keeps the table."""
    return torchvision.models.SwinTransformer(patch_size=[2, 2], embed_dim=8, depths=[2, 1], num_heads=[2, 2],
                                              window_size=[2, 2], stochastic_depth_prob=0.0, num_classes=3)


def tiny_maxvit():
    """torchvision's MaxVit in miniature (16x16 images): MBConv with squeeze-and-excitation, window and grid
    attention through Einsum, the relative position bias gathered from its learned table (do_constant_folding=False
    keeps the table)."""
    return torchvision.models.MaxVit(input_size=(16, 16), stem_channels=8, partition_size=2, block_channels=[8],
                                     block_layers=[1], head_dim=4, stochastic_depth_prob=0.0, num_classes=3)


def perturb_parameters(model, gen):
    """Every parameter moved by a random 0.1 x N(0, 1), so that no two are equal: TransformerEncoder copies its
    first layer, biases and class tokens start at 0, and torch's exporter shares initializers of equal value,
    where each must be a parameter of its own to compare its gradient."""
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.1 * torch.randn(p.shape, generator=gen))


def randomize_norms(model, gen):
    """Batch norms with weights and statistics other than 1 and 0, so every one is tested."""
    for m in model.modules():
        if isinstance(m, (nn.BatchNorm2d, nn.LayerNorm)):
            with torch.no_grad():
                if m.weight is not None:  # affine=False: none to set
                    m.weight.copy_(1 + 0.2 * torch.randn(m.weight.shape, generator=gen))
                    m.bias.copy_(0.1 * torch.randn(m.bias.shape, generator=gen))
                if isinstance(m, nn.BatchNorm2d):
                    m.running_mean.copy_(0.1 * torch.randn(m.running_mean.shape, generator=gen))
                    m.running_var.copy_(1 + 0.3 * torch.rand(m.running_var.shape, generator=gen))


def export(model, example, path, opset, training=torch.onnx.TrainingMode.PRESERVE, fold=True):
    model.eval()
    # PRESERVE keeps batch norm as it is (EVAL would fold it into the convolutions, which
    # changes the parameters); the model is in eval mode, so no dropout is exported.
    # TRAINING exports dropout too. fold=False keeps a learned table gathered by constant
    # indices (a relative position bias) as the table, which torch's constant folding would
    # replace by the gathered copy.
    torch.onnx.export(model, example, path, opset_version=opset, training=training, do_constant_folding=fold,
                      input_names=["input"], output_names=["logits"], dynamic_axes={"input": {0: "batch"}})
    onnx.checker.check_model(onnx.load(path))


def floats(t):
    return [float(f"{v:.9g}") for v in t.detach().reshape(-1).tolist()]


def write_fixture(name, make_model, sample_shape, classes, out_dir, opset=13, perturb=False, fold=True, rewrite=None,
                  loss=None):
    """The fixture of the model `make_model` builds, with initial weights from a fixed seed; rewrite(path), if given,
    edits the exported file (the same function written another way); loss(output, x, labels), if given, trains it
    instead of cross-entropy (reconstruction_loss: the file's fixture says "training_loss": "reconstruction")."""
    torch.manual_seed(1234)
    model = make_model()
    gen = torch.Generator().manual_seed(1234)
    randomize_norms(model, gen)
    if perturb:
        perturb_parameters(model, gen)
    x = torch.rand((BATCH,) + sample_shape, generator=gen) * 2 - 1
    labels = torch.randint(0, classes, (BATCH,), generator=gen)
    path = os.path.join(out_dir, name + ".onnx")
    export(model, x, path, opset, fold=fold)
    if rewrite:
        rewrite(path)
    reference_outputs(name, model, x, labels, path, out_dir, loss=loss)


def reference_outputs(name, model, x, labels, path, out_dir, token_ids=False, loss=None):
    """NAME.json: the input, labels, PyTorch's logits (the output) in eval mode, and its loss (cross-entropy, or
    loss(output, x, labels)) and gradients after one forward and backward in training mode; token ids are written as
    integers."""
    model.eval()
    with torch.no_grad():
        logits = model(x)
    model.train()
    model.zero_grad()
    training_loss = "reconstruction" if loss is reconstruction_loss else "cross_entropy"
    loss = (loss or (lambda output, x, labels: nn.functional.cross_entropy(output, labels)))(model(x), x, labels)
    loss.backward()
    # Gradients by initializer name, in the file's layout: torch stores a Linear weight it
    # exports as MatMul transposed, under a name of its own.
    inits = {i.name: onnx.numpy_helper.to_array(i) for i in onnx.load(path).graph.initializer}
    grads = {}
    for n, p in model.named_parameters():
        if n in inits:
            grads[n] = floats(p.grad)
            continue
        t = p.detach().t().numpy()
        found = [k for k, v in inits.items() if v.shape == t.shape and (v == t).all()]
        if not found:  # a vector the file holds as [C, 1, 1], for a broadcast Mul or Add (GroupNorm's weight, bias)
            flat = p.detach().numpy().ravel()
            found = [k for k, v in inits.items() if v.ndim > 1 and v.size == flat.size and (v.ravel() == flat).all()]
            if len(found) == 1:
                grads[found[0]] = floats(p.grad)
                continue
        if len(found) != 1:
            sys.exit(f"{name}: parameter {n} is not an initializer of the file, as is or transposed")
        grads[found[0]] = floats(p.grad.t())
    fixture = {
        "model": name,
        "input_shape": list(x.shape),
        "input": x.reshape(-1).tolist() if token_ids else floats(x),
        "labels": labels.tolist(),
        "logits": floats(logits),
        "loss": float(loss),
        "gradients": grads,
        "trainable_parameters": sum(p.numel() for p in model.parameters()),
    }
    if token_ids:
        fixture["input_kind"] = "token_ids"
    if training_loss != "cross_entropy":
        fixture["training_loss"] = training_loss
    with open(os.path.join(out_dir, name + ".json"), "w") as f:
        json.dump(fixture, f)


def strip_weights(path):
    """Keeps each initializer's name, type and dimensions; drops its data."""
    m = onnx.load(path)
    for t in m.graph.initializer:
        t.ClearField("raw_data")
        t.ClearField("float_data")
    onnx.save(m, path)


def write_structure(name, model, out_dir, training=torch.onnx.TrainingMode.PRESERVE):
    x = torch.rand(1, 3, 224, 224)
    path = os.path.join(out_dir, name + ".onnx")
    export(model, x, path, 13, training)
    strip_weights(path)
    with open(os.path.join(out_dir, name + ".json"), "w") as f:
        json.dump({"model": name, "trainable_parameters": sum(p.numel() for p in model.parameters())}, f)


class PooledDropout(nn.Module):
    """Inception v3's head: dropout of the pooled [N, C, 1, 1] before the flatten (and a ReLU there too)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.dropout = nn.Dropout(0.5)
        self.fc = nn.Linear(8, 3)

    def forward(self, x):
        return self.fc(torch.flatten(self.dropout(torch.relu(self.pool(self.conv(x)))), 1))


def write_training_structures(out_dir):
    """Training-mode exports (TrainingMode.TRAINING), structure only: the tiny ResNet's batch norm with its training
    outputs (opset 13: five, the running and saved statistics; opset 17: training_mode 1 and three), and the tiny
    ViT's dropouts, whose ratio is torchvision's default 0.0 (poet imports them as nothing); a dropout and a ReLU of
    global pooling's [N, C, 1, 1] output (Inception v3's head)."""
    torch.manual_seed(1234)
    for name, model, example, opset in (("tiny_resnet_train_opset13", TinyResNet(), (3, 16, 16), 13),
                                         ("tiny_resnet_train_opset17", TinyResNet(), (3, 16, 16), 17),
                                         ("tiny_vit_train", tiny_vit(), (3, 8, 8), 17),
                                         ("pooled_dropout_train", PooledDropout(), (3, 8, 8), 13)):
        path = os.path.join(out_dir, name + ".onnx")
        export(model, torch.rand(BATCH, *example), path, opset, torch.onnx.TrainingMode.TRAINING)
        strip_weights(path)


def write_norm_momentum(out_dir):
    """A batch norm with MNASNet's momentum (0.0003, written 0.9997 in ONNX's convention), structure only."""
    torch.manual_seed(1234)
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4, momentum=0.0003), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                          nn.Flatten(), nn.Linear(4, 2))
    path = os.path.join(out_dir, "norm_momentum.onnx")
    export(model.eval(), torch.rand(BATCH, 3, 8, 8), path, 13)
    strip_weights(path)


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "tests", "data", "onnx")
    os.makedirs(out_dir, exist_ok=True)
    write_fixture("tiny_cnn", TinyCNN, (3, 16, 16), 5, out_dir)
    write_fixture("tiny_resnet", TinyResNet, (3, 16, 16), 10, out_dir)
    write_fixture("tiny_mlp", TinyMLP, (4, 8), 3, out_dir, opset=17)
    write_fixture("tiny_inception", TinyInception, (3, 8, 8), 4, out_dir)
    write_fixture("tiny_fashion", TinyFashion, (1, 28, 28), 10, out_dir)
    write_structure("resnet18", torchvision.models.resnet18(), out_dir)
    write_structure("mobilenet_v2", torchvision.models.mobilenet_v2(), out_dir)
    write_fixture("tiny_transformer", TinyTransformer, (5, 16), 3, out_dir, perturb=True)
    write_fixture("tiny_vit", tiny_vit, (3, 8, 8), 4, out_dir, opset=17, perturb=True)
    write_fixture("tiny_mobilenet_v3", TinyMobileNetV3, (3, 8, 8), 5, out_dir, perturb=True)
    write_fixture("tiny_convnext", TinyConvNeXt, (3, 8, 8), 4, out_dir, perturb=True)
    write_token_fixture("tiny_bert", TinyBert, out_dir)
    write_fixture("tiny_einsum", TinyEinsum, (2, 4, 8), 3, out_dir, perturb=True)
    write_fixture("tiny_swin", tiny_swin, (3, 8, 8), 3, out_dir, perturb=True, fold=False)
    write_fixture("tiny_maxvit", tiny_maxvit, (3, 16, 16), 3, out_dir, perturb=True, fold=False)
    write_fixture("tiny_leaky", TinyLeaky, (3, 8, 8), 4, out_dir, perturb=True)
    write_fixture("tiny_upsample", TinyUpsample, (3, 8, 8), 3, out_dir, perturb=True)
    write_fixture("tiny_group_norm", TinyGroupNorm, (3, 8, 8), 3, out_dir, perturb=True)
    write_fixture("tiny_conv1d", TinyConv1d, (4, 32), 3, out_dir, perturb=True)
    write_fixture("tiny_fixed_norms", TinyFixedNorms, (3, 8, 8), 3, out_dir, perturb=True)
    write_fixture("tiny_decoder", TinyDecoder, (3, 8, 8), 3, out_dir, perturb=True)
    write_fixture("tiny_bilinear", TinyBilinear, (3, 8, 8), 3, out_dir, perturb=True)
    write_fixture("tiny_signal", TinySignal, (4, 16), 3, out_dir, perturb=True)
    write_fixture("tiny_prelu", TinyPRelu, (1, 8, 8), 3, out_dir, perturb=True)
    write_fixture("tiny_spectrogram", TinySpectrogram, (1, 16, 12), 3, out_dir, perturb=True)
    write_fixture("tiny_tf_padding", TinyTfPadding, (3, 8, 8), 3, out_dir, perturb=True,
                  rewrite=fold_pads_as_tensorflow_does([{"auto_pad": "SAME_UPPER"}, {"pads": [0, 0, 1, 1]},
                                                         {"pads": [0, 1, 1, 2]}]))
    write_fixture("tiny_autoencoder", TinyAutoencoder, (1, 8, 8), 3, out_dir, perturb=True, loss=reconstruction_loss)
    # Exported in training mode, with its dropout: imported alike, planned with the dropout.
    torch.manual_seed(1234)
    export(TinyTransformer(dropout=0.1), torch.rand(BATCH, 5, 16), os.path.join(out_dir, "tiny_transformer_train.onnx"),
           14, torch.onnx.TrainingMode.TRAINING)
    write_structure("vit_b_16", torchvision.models.vit_b_16(), out_dir)
    write_seq_first(out_dir)
    write_training_structures(out_dir)
    write_norm_momentum(out_dir)
    write_external(out_dir)


def write_external(out_dir):
    """tiny_mlp with its weights in a file beside it, as save_as_external_data writes large
    models: poet's outputs must not replace that file (cli_smoke)."""
    os.makedirs(os.path.join(out_dir, "external"), exist_ok=True)
    m = onnx.load(os.path.join(out_dir, "tiny_mlp.onnx"))
    onnx.save_model(m, os.path.join(out_dir, "external", "tiny_mlp.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="tiny_mlp.weights", size_threshold=0)


if __name__ == "__main__":
    main()
