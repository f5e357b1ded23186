//! The themes (`--theme`): each palette's screen at 80×24, its text and its colours, as
//! snapshots; `NO_COLOR` (a theme without colour) draws every palette alike; and the scales
//! an operator reads (the log and split memory axes, the per-GPU memory rows against the
//! most seen) on the same screen.

use provetop::app::{Action, App};
use provetop::theme::{Palette, Theme};
use provetop_testkit::screen::{buffer_styles, buffer_text};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

use crate::ui_snapshots::live_usage_app;

/// The screen's text, then its colours (one letter a style).
fn text_and_styles(app: &App, w: u16, h: u16) -> String {
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    term.draw(|f| {
        provetop::ui::draw(f, app);
    })
    .unwrap();
    let buf = term.backend().buffer();
    format!("{}--\n{}", buffer_text(buf), buffer_styles(buf))
}

fn themed(palette: Palette) -> App {
    let mut app = live_usage_app(1);
    app.theme = Theme::of(palette);
    app
}

#[test]
fn theme_default_80x24() {
    insta::assert_snapshot!(text_and_styles(&themed(Palette::Default), 80, 24));
}

#[test]
fn theme_light_80x24() {
    insta::assert_snapshot!(text_and_styles(&themed(Palette::Light), 80, 24));
}

#[test]
fn theme_colorblind_80x24() {
    insta::assert_snapshot!(text_and_styles(&themed(Palette::ColorBlind), 80, 24));
}

#[test]
fn without_colour_every_theme_draws_the_same_screen() {
    let mono = text_and_styles(&live_usage_app(1), 80, 24);
    for p in Palette::ALL {
        let mut app = live_usage_app(1);
        app.theme = Theme {
            color: false,
            palette: p,
        };
        assert_eq!(text_and_styles(&app, 80, 24), mono, "{}", p.name());
    }
}

#[test]
fn the_memory_title_names_the_axis_and_the_usage_title_the_gpu_scale() {
    let mut app = live_usage_app(1);
    let title = |app: &App| {
        let mut term = Terminal::new(TestBackend::new(120, 40)).unwrap();
        term.draw(|f| {
            provetop::ui::draw(f, app);
        })
        .unwrap();
        buffer_text(term.backend().buffer())
    };
    assert!(title(&app).contains("─ memory ─"));
    app.act(Action::MemAxis);
    let s = title(&app);
    assert!(s.contains("─ memory (log axis) ─"), "{s}");
    app.act(Action::MemAxis);
    let s = title(&app);
    assert!(
        s.contains("─ memory (split axis) ─") && s.contains('╪'),
        "{s}"
    );
    app.act(Action::MemAxis);
    assert!(title(&app).contains("─ memory ─"));
    app.act(Action::GpuMemScale);
    let s = title(&app);
    assert!(s.contains("gmem scale: most seen"), "{s}");
}

#[test]
fn swap_is_drawn_and_named_only_where_the_tree_has_some() {
    use provetop_shared::RecordBody;
    let screen = |app: &App| {
        let mut term = Terminal::new(TestBackend::new(200, 60)).unwrap();
        term.draw(|f| {
            provetop::ui::draw(f, app);
        })
        .unwrap();
        buffer_text(term.backend().buffer())
    };
    let none = crate::ui_snapshots::live_app_of(true, |recs| recs);
    let legend = |s: &str| {
        s.lines()
            .find(|l| l.starts_with("─ memory"))
            .unwrap()
            .to_string()
    };
    assert!(
        !legend(&screen(&none)).contains("swap"),
        "{}",
        screen(&none)
    );
    let swapped = crate::ui_snapshots::live_app_of(true, |mut recs| {
        for r in &mut recs {
            if let RecordBody::Sample(s) = &mut r.body {
                s.swap = Some(3 << 30);
            }
        }
        recs
    });
    let s = screen(&swapped);
    assert!(legend(&s).contains("swap 3.00G"), "{s}");
}
