// Shared by build.rs (via include!) and the library: finding nvcc.
// Kept free of dependencies so the build script can compile it on its own.

/// Where nvcc was found, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nvcc {
    /// Path of the nvcc executable.
    pub path: std::path::PathBuf,
    /// Which lookup found it: "CUDA_HOME", "CUDA_PATH" or "PATH".
    pub via: &'static str,
}

/// Find nvcc: `$CUDA_HOME/bin/nvcc`, then `$CUDA_PATH/bin/nvcc`, then `nvcc` on `PATH`.
pub fn find_nvcc() -> Option<Nvcc> {
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(dir) = std::env::var_os(var) {
            let p = std::path::Path::new(&dir).join("bin").join("nvcc");
            if p.is_file() {
                return Some(Nvcc {
                    path: p,
                    via: if var == "CUDA_HOME" {
                        "CUDA_HOME"
                    } else {
                        "CUDA_PATH"
                    },
                });
            }
        }
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("nvcc"))
        .find(|p| p.is_file())
        .map(|path| Nvcc { path, via: "PATH" })
}

/// The one-line message a GPU build without nvcc fails with.
pub const NO_NVCC: &str = "provetop-kernels: the `cuda`/`supraseal` features need nvcc (CUDA 12+), \
found neither $CUDA_HOME/bin/nvcc, $CUDA_PATH/bin/nvcc nor nvcc on PATH. On a machine without CUDA run \
`bash kernels/setup-cuda-toolchain.sh` and `source ~/.cache/provetop-cuda/env.sh`, then build again \
(see docs/gpu.md).";
