// Rows of validation/data/*_sdpa_cases.csv (PyTorch's scaled_dot_product_attention backends measured by
// validation/sdpa_measure.py) as measurements the simulator can run: the flash backend's forward kernel is
// the flash2 schedule with that kernel's tiles (read from its template) and its measured occupancy; the
// counters are those of the attention kernels only. The other rows are listed with the reason they are not
// simulated yet.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "sim/csv_row.h"
#include "sim/validate.h"

namespace attnsim {

std::vector<std::string> sdpa_columns();

// The row as a measurement; rows the simulator cannot run yet (cuDNN's persistent kernels, backward passes,
// cases that were not measured) come back with `not_simulated` saying why.
Measurement sdpa_measurement(const CsvRow& row);

}  // namespace attnsim
