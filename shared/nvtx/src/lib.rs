//! provetop's NVTX v3 injection library (`libprovetop_nvtx.so`).
//!
//! `provetop run` names it in `NVTX_INJECTION64_PATH` and hands the child a pipe in
//! `PROVETOP_NVTX_FD`. A program's first NVTX call (C/C++ NVTX v3 headers, the `nvtx` Python
//! package, `torch.cuda.nvtx`, …) loads it and calls [`InitializeInjectionNvtx2`], which
//! installs the callbacks of [`hooks`]: from then on every range push/pop, start/end, marker,
//! domain, registered string and category name lands in a per-thread ring ([`ring`],
//! [`local`]) and a writer thread ([`writer`]) sends them to provetop as lines (the format:
//! docs/nvtx.md), stamped on `CLOCK_MONOTONIC` at the call, provetop's clock.
//!
//! The program is never blocked and never fails for it: without the pipe the initialization
//! declines (NVTX then turns every call into a no-op), rings that are full and budgets that
//! are spent drop events (counted and reported), and a write error silences the writer.

pub mod abi;
pub mod hooks;
pub mod local;
pub mod names;
pub mod ring;
pub mod writer;

use std::ffi::{c_int, c_uint};
use std::sync::OnceLock;

use abi::{ExportTableCallbacks, FunctionPointer, FunctionTable, GetExportTable};

/// The pipe's descriptor, named by provetop.
pub const FD_VAR: &str = "PROVETOP_NVTX_FD";

/// This process's id (read each time: a forked child has its own).
pub fn pid() -> u32 {
    std::process::id()
}

/// The descriptor in `$PROVETOP_NVTX_FD`, made non-blocking, or why there is none.
fn pipe_from_env() -> Result<i32, String> {
    if std::env::var("PROVETOP_EVENTS").is_ok_and(|v| v.trim().eq_ignore_ascii_case("off")) {
        return Err("PROVETOP_EVENTS=off".into());
    }
    let raw = std::env::var(FD_VAR).map_err(|_| format!("${FD_VAR} is not set"))?;
    let fd: i32 = raw
        .trim()
        .parse()
        .map_err(|_| format!("{FD_VAR}={raw} is not a file descriptor number"))?;
    // SAFETY: fcntl on any number is safe; it fails with EBADF for one not open.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if fd < 0 || flags < 0 {
        return Err(format!("{FD_VAR}={raw} is not an open descriptor"));
    }
    // SAFETY: as above, on a descriptor that is open.
    unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) };
    Ok(fd)
}

/// Write `entries` into the program's slots of `module`.
///
/// # Safety
/// `get_table` is NVTX's `GetModuleFunctionTable`.
unsafe fn fill(
    get_table: unsafe extern "C" fn(c_int, *mut FunctionTable, *mut c_uint) -> c_int,
    module: c_int,
    entries: &[(usize, FunctionPointer)],
) -> bool {
    let mut table: FunctionTable = std::ptr::null_mut();
    let mut size: c_uint = 0;
    // SAFETY: NVTX's function, with valid out-pointers.
    if unsafe { get_table(module, &mut table, &mut size) } == 0 || table.is_null() {
        return false;
    }
    for &(id, f) in entries {
        if id >= size as usize {
            continue;
        }
        // SAFETY: `table` has `size` entries, each null or a pointer to one of the program's
        // function pointer slots (nvtxTypes.h: "array of pointers to function pointers").
        unsafe {
            let slot = *table.add(id);
            if !slot.is_null() {
                *slot = Some(f);
            }
        }
    }
    true
}

/// NVTX's entry point into an injection library: install the callbacks; 1 on success, 0 to
/// decline (NVTX then makes every call a no-op).
///
/// # Safety
/// Called by NVTX with its `nvtxGetExportTable`, once per NVTX instance in the process
/// (a program may hold several: each library that embeds the header-only API has its own).
#[no_mangle]
pub unsafe extern "C" fn InitializeInjectionNvtx2(get_export_table: GetExportTable) -> c_int {
    // One writer per process, however many NVTX instances call in.
    static STARTED: OnceLock<Result<(), String>> = OnceLock::new();
    let started = STARTED.get_or_init(|| {
        let fd = pipe_from_env()?;
        writer::start(fd).map_err(|e| format!("cannot start its writer thread: {e}"))
    });
    if let Err(why) = started {
        // Said once per process (the OnceLock keeps the answer for later instances).
        static SAID: std::sync::Once = std::sync::Once::new();
        SAID.call_once(|| eprintln!("provetop-nvtx: {why}; NVTX ranges are not recorded"));
        return 0;
    }
    let Some(get) = get_export_table else {
        return 0;
    };
    // SAFETY: NVTX's export-table getter, with a table id it defines.
    let t = unsafe { get(abi::ETID_CALLBACKS) }.cast::<ExportTableCallbacks>();
    if t.is_null() {
        return 0;
    }
    // SAFETY: a non-null NVTX_ETID_CALLBACKS table is an NvtxExportTableCallbacks.
    let Some(get_table) = (unsafe { (*t).get_module_function_table }) else {
        return 0;
    };
    // SAFETY: NVTX's GetModuleFunctionTable.
    let ok = unsafe {
        fill(get_table, abi::MODULE_CORE, &hooks::core())
            && fill(get_table, abi::MODULE_CORE2, &hooks::core2())
    };
    ok as c_int
}
