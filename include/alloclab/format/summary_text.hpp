#pragma once
// A trace's summary as `alloclab info` prints it: the counts, anomalies (the first few listed),
// histograms, top sizes and runs, in the words and layout a person reads on a terminal.
#include <cstddef>
#include <string>

#include "alloclab/format/summary.hpp"

namespace alloclab {

// Every line `alloclab info TRACE` prints, each ending in '\n'. `anomalies_listed`: how many of
// summary.first_anomalies to list (the rest are counted); 0 lists none.
std::string summary_text(const TraceSummary& summary, std::size_t anomalies_listed);

}  // namespace alloclab
