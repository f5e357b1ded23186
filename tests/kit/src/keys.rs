//! Scripted key presses for the screen's event loop, in place of the terminal's input.

use std::time::Duration;

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use futures::Stream;

/// Each `(ms, key)`: the character key pressed `ms` after the one before (so frames are drawn
/// between them); the stream ends after the last.
pub fn keys(script: &[(u64, char)]) -> impl Stream<Item = std::io::Result<Event>> + Unpin {
    let script: Vec<(u64, char)> = script.to_vec();
    Box::pin(futures::stream::unfold(
        script.into_iter(),
        |mut it| async {
            let (ms, c) = it.next()?;
            tokio::time::sleep(Duration::from_millis(ms)).await;
            let k = KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE);
            Some((Ok(Event::Key(k)), it))
        },
    ))
}
