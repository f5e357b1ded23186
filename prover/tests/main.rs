//! provetop-prover's integration tests: its command line, its batch modes, its proofs.
//!
//! One test binary for the files named here (each binary is a link of the whole workspace).

mod common;

mod cli;
mod modes;
mod proofs;
