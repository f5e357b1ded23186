//! provetop-collect's integration tests: the sampler, pinned memory maps, the GPU reader, the supervisor, the log-line grammars under fuzzing, and the alert hook's runner. `child_lifetime` keeps its own binary: it kills every child of its process.
//!
//! One test binary for the files named here (each binary is a link of the whole workspace).

mod gpu;
mod hook_runner;
mod kernel;
mod loglines_fuzz;
mod pinned_maps;
mod sampler;
mod supervisor;
