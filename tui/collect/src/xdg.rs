//! Where the XDG base directory spec puts provetop's files: `$VAR`, else `$HOME/<fallback>`
//! (an empty variable counts as unset, as the spec says).

use std::path::PathBuf;

/// `$var` when set and not empty, else `$HOME/home_relative`; None when neither is set.
pub fn base_dir(var: &str, home_relative: &str) -> Option<PathBuf> {
    std::env::var_os(var)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| PathBuf::from(h).join(home_relative))
        })
}
