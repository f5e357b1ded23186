//! Which proofs of a session are compared ([`Selection`], `--mode` and `--proofs`), and the
//! interval arithmetic behind the time a selection covers ([`merged`]).

use provetop_shared::BatchMode;

/// Which proofs of a session are compared.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Selection {
    /// Only proofs of this mode.
    pub mode: Option<BatchMode>,
    /// Only the proofs numbered `from..=to` (1-based, in start order, counted after the
    /// mode filter); `None`: every one.
    pub range: Option<(usize, Option<usize>)>,
}

impl Selection {
    /// Whether every proof (and so the whole recording) is compared.
    pub fn is_all(&self) -> bool {
        self.mode.is_none() && self.range.is_none()
    }

    /// In words: "the whole recording", "mode sps", "proofs 2..5", "mode sps, proofs 3".
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(m) = self.mode {
            parts.push(format!("mode {m}"));
        }
        if let Some((a, b)) = self.range {
            parts.push(match b {
                Some(b) if b == a => format!("proof {a}"),
                Some(b) => format!("proofs {a}..{b}"),
                None => format!("proofs {a}.."),
            });
        }
        if parts.is_empty() {
            "the whole recording".into()
        } else {
            parts.join(", ")
        }
    }
}

/// Parse `--proofs`: `3`, `2..5`, `4..`, `..6` (1-based, inclusive).
pub fn parse_range(s: &str) -> Result<(usize, Option<usize>), String> {
    let num = |x: &str| -> Result<usize, String> {
        match x.trim().parse::<usize>() {
            Ok(n) if n >= 1 => Ok(n),
            _ => Err(format!(
                "bad proof range {s:?}: proofs are numbered from 1 (want N, A..B, A.. or ..B)"
            )),
        }
    };
    match s.split_once("..") {
        None => num(s).map(|n| (n, Some(n))),
        Some((a, b)) => {
            let from = if a.trim().is_empty() { 1 } else { num(a)? };
            let to = if b.trim().is_empty() {
                None
            } else {
                Some(num(b)?)
            };
            if to.is_some_and(|t| t < from) {
                return Err(format!("bad proof range {s:?}: it ends before it starts"));
            }
            Ok((from, to))
        }
    }
}

/// Intervals merged where they overlap or touch, sorted (compare's selected proofs, and
/// classify's phase cover).
pub(crate) fn merged(mut v: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    v.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(v.len());
    for (a, b) in v {
        match out.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proof_ranges_parse_and_refuse_nonsense() {
        assert_eq!(parse_range("3"), Ok((3, Some(3))));
        assert_eq!(parse_range("2..5"), Ok((2, Some(5))));
        assert_eq!(parse_range("4.."), Ok((4, None)));
        assert_eq!(parse_range("..6"), Ok((1, Some(6))));
        assert!(parse_range("0").unwrap_err().contains("numbered from 1"));
        assert!(parse_range("5..2").unwrap_err().contains("ends before"));
        assert!(parse_range("x").is_err());
    }

    #[test]
    fn intervals_merge_where_they_overlap() {
        assert_eq!(
            merged(vec![(3, 8), (0, 5), (10, 12)]),
            vec![(0, 8), (10, 12)]
        );
    }
}
