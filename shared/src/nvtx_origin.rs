//! Where an NVTX range or marker came from, as the program told provetop's injection library:
//! carried by `Derived` records of grammar `nvtx` ([`crate::Derived::nvtx`]).

use serde::{Deserialize, Serialize};

/// The program's own account of an NVTX range or marker: its name as given, the thread and
/// the domain, the category where it named one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NvtxOrigin {
    /// The name as the program gave it (the phase may be a protocol phase it maps to).
    pub name: String,
    /// The process that called NVTX (the child or one of its descendants).
    pub pid: u32,
    /// The kernel's id of the calling thread (for a start/end range, the thread that started
    /// it).
    pub thread: u32,
    /// The thread's name, where the program named it (`nvtxNameOsThread`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_name: Option<String>,
    /// The domain's name (`None`: NVTX's default domain).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// The category's name, or its number where the program named none (`None`: 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// Nesting level (push/pop ranges; `None` for start/end ranges and markers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depth: Option<u32>,
}
