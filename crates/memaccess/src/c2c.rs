//! perf c2c's report (placeholder until the aggregation lands).
