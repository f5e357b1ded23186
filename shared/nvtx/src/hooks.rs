//! The functions NVTX calls in place of its no-ops, one per callback id, and the reading of
//! the program's arguments (C strings, wide strings, event attributes) they need.
//!
//! Every pointer comes from the program through NVTX: it is read only as far as the NVTX
//! API defines it (a null pointer is an empty name), strings only up to a bound, and
//! attributes only as far as their `size` says they reach.

use std::ffi::{c_char, c_int};

use crate::abi::{self, EventAttributes, FunctionPointer};
use crate::local;
use crate::names::{self, Domain, Registered};
use crate::ring::{Name, Slot, NAME_MAX};

/// Longest name read for a domain, a category, a thread or a registered string.
const NAME_READ_MAX: usize = 4096;

/// Monotonic ns: the clock provetop stamps its records with.
pub fn now() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec to write; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// The bytes of a NUL-terminated string, at most `max` of them.
///
/// # Safety
/// `p` is null or points to a NUL-terminated string (or to at least `max` readable bytes).
unsafe fn c_bytes<'a>(p: *const c_char, max: usize) -> &'a [u8] {
    if p.is_null() {
        return &[];
    }
    let mut n = 0;
    // SAFETY: the caller's guarantee: every byte up to the NUL (or `max`) is readable.
    while n < max && unsafe { *p.add(n) } != 0 {
        n += 1;
    }
    // SAFETY: the `n` bytes just read are readable.
    unsafe { std::slice::from_raw_parts(p.cast::<u8>(), n) }
}

/// A wide (UTF-32 on Linux) string as UTF-8, at most `max` characters.
///
/// # Safety
/// `p` is null or points to a NUL-terminated `wchar_t` string (or `max` readable ones).
unsafe fn wide(p: *const libc::wchar_t, max: usize) -> String {
    let mut s = String::new();
    if p.is_null() {
        return s;
    }
    for i in 0..max {
        // SAFETY: the caller's guarantee, as in `c_bytes`.
        let c = unsafe { *p.add(i) };
        if c == 0 {
            break;
        }
        s.push(char::from_u32(c as u32).unwrap_or(char::REPLACEMENT_CHARACTER));
    }
    s
}

/// # Safety: as [`c_bytes`].
unsafe fn ascii_into(slot: &mut Slot, p: *const c_char) {
    // One byte past the kept length, so a cut lands on a character boundary.
    // SAFETY: the caller's guarantee.
    slot.set_text(unsafe { c_bytes(p, NAME_MAX + 1) });
}

/// # Safety: as [`wide`].
unsafe fn wide_into(slot: &mut Slot, p: *const libc::wchar_t) {
    // SAFETY: the caller's guarantee.
    slot.set_text(unsafe { wide(p, NAME_MAX) }.as_bytes());
}

/// The category and the message of `a` into `slot`.
///
/// # Safety
/// `a` is null or points to an `nvtxEventAttributes_t` at least `a.size` bytes long whose
/// message is what its `messageType` says.
unsafe fn attrs_into(slot: &mut Slot, a: *const EventAttributes) {
    if a.is_null() {
        return;
    }
    // SAFETY: `version` and `size` open every attribute structure NVTX defines.
    let size = unsafe { (*a).size } as usize;
    if size >= 8 {
        // SAFETY: the structure reaches past `category` (bytes 4..8).
        slot.category = unsafe { (*a).category };
    }
    if size < abi::ATTRIBUTES_WITH_MESSAGE {
        return;
    }
    // SAFETY: the structure reaches to the end of `message`; the union is read as the type
    // field says, and a registered handle is one of ours (NVTX initialises the injection
    // before any registration, so every handle came from `register_string_*`).
    unsafe {
        match (*a).message_type {
            abi::MESSAGE_ASCII => ascii_into(slot, (*a).message.ascii),
            abi::MESSAGE_UNICODE => wide_into(slot, (*a).message.unicode),
            abi::MESSAGE_REGISTERED => {
                let h = (*a).message.registered.cast::<Registered>();
                if !h.is_null() {
                    slot.name = Name::Registered((*h).text);
                }
            }
            _ => {}
        }
    }
}

/// A domain handle's id (null: the default domain).
///
/// # Safety
/// `d` is null or a handle from [`domain_create_a`] / [`domain_create_w`].
unsafe fn domain_id(d: *const Domain) -> u32 {
    if d.is_null() {
        0
    } else {
        // SAFETY: the caller's guarantee: our handles point at leaked `Domain`s.
        unsafe { (*d).id }
    }
}

// The callbacks. Their safety contract is NVTX's API: the pointers are what the header says.

unsafe extern "C" fn mark_ex(a: *const EventAttributes) {
    // SAFETY: NVTX's contract (the module doc).
    local::mark(now, 0, |s| unsafe { attrs_into(s, a) });
}
unsafe extern "C" fn mark_a(m: *const c_char) {
    // SAFETY: NVTX's contract.
    local::mark(now, 0, |s| unsafe { ascii_into(s, m) });
}
unsafe extern "C" fn mark_w(m: *const libc::wchar_t) {
    // SAFETY: NVTX's contract.
    local::mark(now, 0, |s| unsafe { wide_into(s, m) });
}
unsafe extern "C" fn range_start_ex(a: *const EventAttributes) -> u64 {
    // SAFETY: NVTX's contract.
    local::start(now, 0, |s| unsafe { attrs_into(s, a) })
}
unsafe extern "C" fn range_start_a(m: *const c_char) -> u64 {
    // SAFETY: NVTX's contract.
    local::start(now, 0, |s| unsafe { ascii_into(s, m) })
}
unsafe extern "C" fn range_start_w(m: *const libc::wchar_t) -> u64 {
    // SAFETY: NVTX's contract.
    local::start(now, 0, |s| unsafe { wide_into(s, m) })
}
unsafe extern "C" fn range_end(id: u64) {
    local::end(now, 0, id);
}
unsafe extern "C" fn range_push_ex(a: *const EventAttributes) -> c_int {
    // SAFETY: NVTX's contract.
    local::push(now, 0, |s| unsafe { attrs_into(s, a) })
}
unsafe extern "C" fn range_push_a(m: *const c_char) -> c_int {
    // SAFETY: NVTX's contract.
    local::push(now, 0, |s| unsafe { ascii_into(s, m) })
}
unsafe extern "C" fn range_push_w(m: *const libc::wchar_t) -> c_int {
    // SAFETY: NVTX's contract.
    local::push(now, 0, |s| unsafe { wide_into(s, m) })
}
unsafe extern "C" fn range_pop() -> c_int {
    local::pop(now, 0)
}
unsafe extern "C" fn name_category_a(category: u32, name: *const c_char) {
    // SAFETY: NVTX's contract.
    names::name_category(0, category, unsafe { c_bytes(name, NAME_READ_MAX) });
}
unsafe extern "C" fn name_category_w(category: u32, name: *const libc::wchar_t) {
    // SAFETY: NVTX's contract.
    names::name_category(0, category, unsafe { wide(name, NAME_READ_MAX) }.as_bytes());
}
unsafe extern "C" fn name_os_thread_a(tid: u32, name: *const c_char) {
    // SAFETY: NVTX's contract.
    names::name_thread(tid, unsafe { c_bytes(name, NAME_READ_MAX) });
}
unsafe extern "C" fn name_os_thread_w(tid: u32, name: *const libc::wchar_t) {
    // SAFETY: NVTX's contract.
    names::name_thread(tid, unsafe { wide(name, NAME_READ_MAX) }.as_bytes());
}
unsafe extern "C" fn domain_mark_ex(d: *const Domain, a: *const EventAttributes) {
    // SAFETY: NVTX's contract; domain handles are ours.
    let id = unsafe { domain_id(d) };
    // SAFETY: NVTX's contract.
    local::mark(now, id, |s| unsafe { attrs_into(s, a) });
}
unsafe extern "C" fn domain_range_start_ex(d: *const Domain, a: *const EventAttributes) -> u64 {
    // SAFETY: NVTX's contract; domain handles are ours.
    let id = unsafe { domain_id(d) };
    // SAFETY: NVTX's contract.
    local::start(now, id, |s| unsafe { attrs_into(s, a) })
}
unsafe extern "C" fn domain_range_end(d: *const Domain, range: u64) {
    // SAFETY: NVTX's contract; domain handles are ours.
    local::end(now, unsafe { domain_id(d) }, range);
}
unsafe extern "C" fn domain_range_push_ex(d: *const Domain, a: *const EventAttributes) -> c_int {
    // SAFETY: NVTX's contract; domain handles are ours.
    let id = unsafe { domain_id(d) };
    // SAFETY: NVTX's contract.
    local::push(now, id, |s| unsafe { attrs_into(s, a) })
}
unsafe extern "C" fn domain_range_pop(d: *const Domain) -> c_int {
    // SAFETY: NVTX's contract; domain handles are ours.
    local::pop(now, unsafe { domain_id(d) })
}
unsafe extern "C" fn domain_name_category_a(d: *const Domain, category: u32, n: *const c_char) {
    // SAFETY: NVTX's contract; domain handles are ours.
    let (id, name) = unsafe { (domain_id(d), c_bytes(n, NAME_READ_MAX)) };
    names::name_category(id, category, name);
}
unsafe extern "C" fn domain_name_category_w(
    d: *const Domain,
    category: u32,
    n: *const libc::wchar_t,
) {
    // SAFETY: NVTX's contract; domain handles are ours.
    let (id, name) = unsafe { (domain_id(d), wide(n, NAME_READ_MAX)) };
    names::name_category(id, category, name.as_bytes());
}
unsafe extern "C" fn domain_register_string_a(
    _d: *const Domain,
    s: *const c_char,
) -> *const Registered {
    // SAFETY: NVTX's contract.
    names::register(unsafe { c_bytes(s, NAME_READ_MAX) })
}
unsafe extern "C" fn domain_register_string_w(
    _d: *const Domain,
    s: *const libc::wchar_t,
) -> *const Registered {
    // SAFETY: NVTX's contract.
    names::register(unsafe { wide(s, NAME_READ_MAX) }.as_bytes())
}
unsafe extern "C" fn domain_create_a(name: *const c_char) -> *const Domain {
    // SAFETY: NVTX's contract.
    names::domain(unsafe { c_bytes(name, NAME_READ_MAX) })
}
unsafe extern "C" fn domain_create_w(name: *const libc::wchar_t) -> *const Domain {
    // SAFETY: NVTX's contract.
    names::domain(unsafe { wide(name, NAME_READ_MAX) }.as_bytes())
}
/// Domains live as long as the process (their ranges may still be in flight).
unsafe extern "C" fn domain_destroy(_d: *const Domain) {}

/// A callback as NVTX's generic function pointer.
macro_rules! fp {
    ($f:expr) => {
        // SAFETY: a function pointer is stored as NVTX's generic one and called back by NVTX
        // through the slot's own type, which is the function's signature (nvToolsExt.h).
        unsafe { std::mem::transmute::<*const (), FunctionPointer>($f as *const ()) }
    };
}

/// The core module's callbacks by id.
pub fn core() -> Vec<(usize, FunctionPointer)> {
    use abi::core::*;
    vec![
        (MARK_EX, fp!(mark_ex)),
        (MARK_A, fp!(mark_a)),
        (MARK_W, fp!(mark_w)),
        (RANGE_START_EX, fp!(range_start_ex)),
        (RANGE_START_A, fp!(range_start_a)),
        (RANGE_START_W, fp!(range_start_w)),
        (RANGE_END, fp!(range_end)),
        (RANGE_PUSH_EX, fp!(range_push_ex)),
        (RANGE_PUSH_A, fp!(range_push_a)),
        (RANGE_PUSH_W, fp!(range_push_w)),
        (RANGE_POP, fp!(range_pop)),
        (NAME_CATEGORY_A, fp!(name_category_a)),
        (NAME_CATEGORY_W, fp!(name_category_w)),
        (NAME_OS_THREAD_A, fp!(name_os_thread_a)),
        (NAME_OS_THREAD_W, fp!(name_os_thread_w)),
    ]
}

/// The core2 (domain) module's callbacks by id.
pub fn core2() -> Vec<(usize, FunctionPointer)> {
    use abi::core2::*;
    vec![
        (DOMAIN_MARK_EX, fp!(domain_mark_ex)),
        (DOMAIN_RANGE_START_EX, fp!(domain_range_start_ex)),
        (DOMAIN_RANGE_END, fp!(domain_range_end)),
        (DOMAIN_RANGE_PUSH_EX, fp!(domain_range_push_ex)),
        (DOMAIN_RANGE_POP, fp!(domain_range_pop)),
        (DOMAIN_NAME_CATEGORY_A, fp!(domain_name_category_a)),
        (DOMAIN_NAME_CATEGORY_W, fp!(domain_name_category_w)),
        (DOMAIN_REGISTER_STRING_A, fp!(domain_register_string_a)),
        (DOMAIN_REGISTER_STRING_W, fp!(domain_register_string_w)),
        (DOMAIN_CREATE_A, fp!(domain_create_a)),
        (DOMAIN_CREATE_W, fp!(domain_create_w)),
        (DOMAIN_DESTROY, fp!(domain_destroy)),
    ]
}
