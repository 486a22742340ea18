// Predicted against measured, for people: a Markdown table, JSON and an SVG scatter plot
// (predicted on x, measured on y, the diagonal and a +-10% band).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "poet/train/prediction.h"

namespace poet::train {

// Median over the rows that ran of |relative_error|; 0 when none ran.
double median_absolute_error(const std::vector<PredictionRow>& rows);

// One line: the median |error| over the plans that ran and the CPU share their steps had,
// with a warning when that share shows other processes were running, and one when storage
// was busy far longer than predicted for a plan's transfers (they ran slower than the
// profile's storage figures say).
std::string prediction_summary(const std::vector<PredictionRow>& rows);

std::string prediction_table_markdown(const std::vector<PredictionRow>& rows);
nlohmann::json prediction_rows_json(const std::vector<PredictionRow>& rows);
std::string prediction_scatter_svg(const std::vector<PredictionRow>& rows, const std::string& title);

}  // namespace poet::train
