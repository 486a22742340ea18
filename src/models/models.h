// One builder per model family; zoo.cpp maps names to them.
#pragma once

#include "poet/models/zoo.h"

namespace poet::models {

Graph linear_mlp(const ModelOptions& o);
Graph vgg16(const ModelOptions& o, std::int64_t classes, std::int64_t image);
Graph resnet18(const ModelOptions& o);
Graph resnet18_cifar(const ModelOptions& o);
Graph resnet50(const ModelOptions& o);
Graph transformer(const ModelOptions& o, int blocks, const char* name);
Graph mobilenet_v2(const ModelOptions& o);
Graph lenet5(const ModelOptions& o);
Graph mcu_cnn(const ModelOptions& o);

}  // namespace poet::models
