//! Fails a GPU build early, with one clear message, when there is no CUDA compiler; a CPU
//! build (no features) never looks for one.

include!("src/toolchain.rs");

fn main() {
    println!("cargo:rerun-if-env-changed=CUDA_HOME");
    println!("cargo:rerun-if-env-changed=CUDA_PATH");
    println!("cargo:rerun-if-env-changed=PATH");
    let gpu = std::env::var_os("CARGO_FEATURE_CUDA").is_some()
        || std::env::var_os("CARGO_FEATURE_SUPRASEAL").is_some();
    if !gpu {
        return;
    }
    match find_nvcc() {
        Some(n) => {
            println!("cargo:rustc-env=PROVETOP_NVCC={}", n.path.display());
            println!(
                "cargo:warning=provetop-kernels: GPU build with nvcc {} (via {})",
                n.path.display(),
                n.via
            );
        }
        None => {
            eprintln!("{NO_NVCC}");
            std::process::exit(1);
        }
    }
}
