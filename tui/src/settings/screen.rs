//! The screen's own settings: its palette and whether it takes the mouse, from `--theme`,
//! `--no-mouse`/`--mouse`, the config file's `theme` and `mouse`, else the defaults (the
//! default palette, the mouse on), by the rule of [`super::layer`]. `NO_COLOR` still turns
//! every palette's colours off ([`Theme::named`]).

use std::path::Path;

use super::file::{load_config, FileConfig};
use super::layer;
use crate::cli::ScreenOpts;
use crate::theme::{Palette, Theme};

/// How the screen looks and what it takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Look {
    pub theme: Theme,
    /// Mouse events are asked of the terminal.
    pub mouse: bool,
}

/// Flags over the file's values over the defaults.
pub fn resolve(opts: &ScreenOpts, file: &FileConfig) -> Look {
    Look {
        theme: Theme::named(layer(opts.theme, file.theme, Palette::Default)),
        mouse: layer(opts.mouse_flag(), file.mouse, true),
    }
}

/// For the screens without the monitoring options (`replay`, `attach`): the flags over the
/// config file at `config` (else the default one, when present).
pub fn load(opts: &ScreenOpts, config: Option<&Path>) -> anyhow::Result<Look> {
    Ok(resolve(opts, &load_config(config)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::file::parse_config;

    #[test]
    fn the_flag_wins_over_the_file_and_the_file_over_the_default() {
        let none = ScreenOpts::default();
        let d = resolve(&none, &FileConfig::default());
        assert_eq!((d.theme.palette, d.mouse), (Palette::Default, true));
        let file = parse_config("theme = \"light\"\nmouse = false").unwrap();
        let f = resolve(&none, &file);
        assert_eq!((f.theme.palette, f.mouse), (Palette::Light, false));
        let flags = ScreenOpts {
            theme: Some(Palette::ColorBlind),
            mouse: true,
            no_mouse: false,
        };
        let g = resolve(&flags, &file);
        assert_eq!((g.theme.palette, g.mouse), (Palette::ColorBlind, true));
        let off = ScreenOpts {
            no_mouse: true,
            ..ScreenOpts::default()
        };
        assert!(!resolve(&off, &FileConfig::default()).mouse);
    }
}
