//! What a program names once and refers to by handle afterwards: domains, registered strings,
//! and the names it gives categories and threads (sent to provetop as lines of their own).
//!
//! Handles are pointers to values that live as long as the process (NVTX never frees them).
//! All of it is bounded: past [`MAX_STRINGS`] strings or [`MAX_STRING_BYTES`] bytes of them a
//! registration gets one shared handle whose text says so, and past [`MAX_DOMAINS`] domains a
//! creation gets the default domain; each is counted and reported.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

/// Most distinct registered strings kept.
pub const MAX_STRINGS: usize = 1 << 21;
/// Most bytes of registered strings kept.
pub const MAX_STRING_BYTES: usize = 128 << 20;
/// Most domains.
pub const MAX_DOMAINS: usize = 4096;
/// Most name lines waiting for the writer.
pub const MAX_PENDING: usize = 1 << 16;
/// The text of a string registered past the bounds.
pub const TOO_MANY: &str = "(too many registered strings)";

/// A domain (`nvtxDomainHandle_t` points at one).
pub struct Domain {
    pub id: u32,
}

/// The default domain: what NVTX's non-domain calls and a null handle mean.
pub static DEFAULT: Domain = Domain { id: 0 };

/// A registered string (`nvtxStringHandle_t` points at one).
pub struct Registered {
    pub text: &'static str,
}

static TOO_MANY_HANDLE: Registered = Registered { text: TOO_MANY };

#[derive(Default)]
struct Table {
    domains: HashMap<&'static str, &'static Domain>,
    strings: HashMap<&'static str, &'static Registered>,
    string_bytes: usize,
    /// Lines naming domains, categories and threads, for the writer.
    pending: VecDeque<String>,
}

/// Strings refused past the bounds, domains refused, name lines dropped.
pub static REFUSED_STRINGS: AtomicU64 = AtomicU64::new(0);
pub static REFUSED_DOMAINS: AtomicU64 = AtomicU64::new(0);
pub static DROPPED_NAMES: AtomicU64 = AtomicU64::new(0);

fn table() -> MutexGuard<'static, Table> {
    static TABLE: OnceLock<Mutex<Table>> = OnceLock::new();
    // A panic while it was held cannot leave it half-updated in a way that matters.
    TABLE
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner())
}

/// Text for the wire: tabs and line ends would break a line; they become spaces.
pub fn clean(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes)
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

fn queue(t: &mut Table, line: String) {
    if t.pending.len() >= MAX_PENDING {
        DROPPED_NAMES.fetch_add(1, Ordering::Relaxed);
    } else {
        t.pending.push_back(line);
    }
}

/// The domain called `name`, created (and announced) on first use.
pub fn domain(name: &[u8]) -> &'static Domain {
    let name = clean(name);
    let mut t = table();
    if let Some(d) = t.domains.get(name.as_str()) {
        return d;
    }
    if t.domains.len() >= MAX_DOMAINS {
        REFUSED_DOMAINS.fetch_add(1, Ordering::Relaxed);
        return &DEFAULT;
    }
    let id = t.domains.len() as u32 + 1;
    let d: &'static Domain = Box::leak(Box::new(Domain { id }));
    let key: &'static str = Box::leak(name.into_boxed_str());
    t.domains.insert(key, d);
    let line = format!("domain\t{}\t{id}\t{key}\n", crate::pid());
    queue(&mut t, line);
    d
}

/// The handle of `text`, registered on first use.
pub fn register(text: &[u8]) -> &'static Registered {
    let text = clean(text);
    let mut t = table();
    if let Some(r) = t.strings.get(text.as_str()) {
        return r;
    }
    if t.strings.len() >= MAX_STRINGS || t.string_bytes + text.len() > MAX_STRING_BYTES {
        REFUSED_STRINGS.fetch_add(1, Ordering::Relaxed);
        return &TOO_MANY_HANDLE;
    }
    t.string_bytes += text.len();
    let key: &'static str = Box::leak(text.into_boxed_str());
    let r: &'static Registered = Box::leak(Box::new(Registered { text: key }));
    t.strings.insert(key, r);
    r
}

/// A category of `domain` named `name`.
pub fn name_category(domain: u32, category: u32, name: &[u8]) {
    let line = format!(
        "category\t{}\t{domain}\t{category}\t{}\n",
        crate::pid(),
        clean(name)
    );
    queue(&mut table(), line);
}

/// The OS thread `tid` named `name`.
pub fn name_thread(tid: u32, name: &[u8]) {
    let line = format!("thread\t{}\t{tid}\t{}\n", crate::pid(), clean(name));
    queue(&mut table(), line);
}

/// The name lines waiting, taken.
pub fn take_pending(out: &mut String) {
    let mut t = table();
    for line in t.pending.drain(..) {
        out.push_str(&line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_string_registered_twice_has_one_handle_and_control_characters_become_spaces() {
        let a = register(b"prove\tsegment\n");
        let b = register(b"prove\tsegment\n");
        assert!(std::ptr::eq(a, b));
        assert_eq!(a.text, "prove segment ");
        let d1 = domain(b"risc0");
        let d2 = domain(b"risc0");
        assert!(std::ptr::eq(d1, d2));
        assert_ne!(d1.id, 0);
    }
}
