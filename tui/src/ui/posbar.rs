//! The replay position bar: state, speed, position / length, a track with alert marks.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use crate::app::{App, Playback, NS};
use crate::ui::fmt_clock;

/// Speed as written on the bar: "0.25×", "1×", "64×".
pub fn fmt_speed(s: f64) -> String {
    if s.fract() == 0.0 {
        format!("{s:.0}×")
    } else {
        format!("{s}×")
    }
}

/// Draw the bar into one row.
pub fn draw(buf: &mut Buffer, area: Rect, app: &App, p: &Playback) {
    if area.height == 0 {
        return;
    }
    let t = &app.theme;
    let len = p.end.saturating_sub(p.start);
    let pos = app.clock.clamp(p.start, p.end) - p.start;
    let state = if p.playing {
        if app.clock >= p.end {
            "■ end"
        } else {
            "▶ play"
        }
    } else {
        "‖ pause"
    };
    let fine = len < 3600 * NS;
    let head = format!(
        " {state} {:>5} {} / {} ",
        fmt_speed(p.speed),
        fmt_clock(pos, fine),
        fmt_clock(len, fine)
    );
    let mut spans = vec![Span::styled(head.clone(), t.bold())];
    let track_w = (area.width as usize).saturating_sub(head.chars().count() + 1);
    if track_w >= 4 {
        let mut track: Vec<char> = vec!['─'; track_w];
        let at = |x: u64| -> usize {
            if len == 0 {
                0
            } else {
                ((x.saturating_sub(p.start)) as u128 * (track_w as u128 - 1) / len as u128) as usize
            }
        };
        for a in &p.alerts {
            track[at(*a).min(track_w - 1)] = '!';
        }
        let cur = at(p.start.saturating_add(pos)).min(track_w - 1);
        for c in track.iter_mut().take(cur) {
            if *c == '─' {
                *c = '━';
            }
        }
        track[cur] = '●';
        spans.push(Span::raw(track.into_iter().collect::<String>()));
    }
    buf.set_line(area.x, area.y, &Line::from(spans), area.width);
}
