//! The bounded queues every domain keeps: what a stream adds past a queue's size pushes its
//! oldest out, so a week-long live run stays small.

use std::collections::VecDeque;

/// Push `x`, dropping the oldest while `q` holds more than `max`.
pub fn push_bounded<T>(q: &mut VecDeque<T>, x: T, max: usize) {
    q.push_back(x);
    while q.len() > max {
        q.pop_front();
    }
}
