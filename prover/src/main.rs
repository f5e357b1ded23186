//! `provetop-prover`: see `provetop-prover --help` and the crate docs.

use provetop_prover::heap::{self, CountingAlloc};

// Count the heap so each proof's working set is measured exactly (see `heap`).
#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

fn main() {
    heap::activate();
    std::process::exit(provetop_prover::cli::main());
}
