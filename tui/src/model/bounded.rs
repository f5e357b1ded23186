//! The bounded queues every domain keeps: what a stream adds past a queue's size pushes its
//! oldest out, so a week-long live run stays small.

use std::collections::VecDeque;
use std::sync::Arc;

/// A bounded history: what a stream adds past `max` pushes its oldest out. It is a
/// persistent vector of shared elements, so a clone of the model (a replay snapshot) shares
/// what it holds with the model it was taken from: two snapshots a few records apart cost
/// what changed between them (the vector's end buffers, pointers to the elements), not the
/// whole history twice.
#[derive(Debug)]
pub struct History<T> {
    items: imbl::Vector<Arc<T>>,
}

impl<T> Clone for History<T> {
    fn clone(&self) -> Self {
        History {
            items: self.items.clone(),
        }
    }
}

impl<T> Default for History<T> {
    fn default() -> Self {
        History {
            items: imbl::Vector::new(),
        }
    }
}

impl<T> History<T> {
    /// Empty.
    pub fn new() -> Self {
        Self::default()
    }

    /// Push `x`, dropping the oldest while more than `max` are kept.
    pub fn push_bounded(&mut self, x: T, max: usize) {
        self.items.push_back(Arc::new(x));
        while self.items.len() > max {
            self.items.pop_front();
        }
    }

    /// Put `x` at index `i` (a span closed late among those after it).
    pub fn insert(&mut self, i: usize, x: T) {
        self.items.insert(i, Arc::new(x));
    }

    pub fn pop_front(&mut self) -> Option<Arc<T>> {
        self.items.pop_front()
    }

    pub fn retain(&mut self, mut keep: impl FnMut(&T) -> bool) {
        self.items.retain(|x| keep(x));
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// The newest `n` elements alone, sharing them.
    pub fn newest(&self, n: usize) -> Self {
        History {
            items: self.items.skip(self.items.len().saturating_sub(n)),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Oldest first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &T> + ExactSizeIterator + '_ {
        self.items.iter().map(|x| x.as_ref())
    }

    pub fn front(&self) -> Option<&T> {
        self.items.front().map(|x| x.as_ref())
    }

    pub fn back(&self) -> Option<&T> {
        self.items.back().map(|x| x.as_ref())
    }

    pub fn get(&self, i: usize) -> Option<&T> {
        self.items.get(i).map(|x| x.as_ref())
    }

    /// The index of the first element for which `pred` is false, `pred` holding of a
    /// prefix (as [`slice::partition_point`]).
    pub fn partition_point(&self, mut pred: impl FnMut(&T) -> bool) -> usize {
        self.items
            .binary_search_by(|x| {
                if pred(x) {
                    std::cmp::Ordering::Less
                } else {
                    std::cmp::Ordering::Greater
                }
            })
            .unwrap_or_else(|i| i)
    }

    /// `older` (ascending by `key`) merged in, ascending by `key`, an element of `older`
    /// before one held on equal keys; then the oldest dropped while more than `max` are kept.
    pub fn merge_older(&mut self, older: Vec<T>, max: usize, key: impl Fn(&T) -> u64) {
        let mut held = std::mem::take(&mut self.items).into_iter().peekable();
        let mut out = imbl::Vector::new();
        for x in older {
            let k = key(&x);
            while let Some(h) = held.next_if(|h| key(h) < k) {
                out.push_back(h);
            }
            out.push_back(Arc::new(x));
        }
        out.extend(held);
        while out.len() > max {
            out.pop_front();
        }
        self.items = out;
    }

    /// The elements from index `i` on.
    pub fn from_index(&self, i: usize) -> impl DoubleEndedIterator<Item = &T> + '_ {
        let i = i.min(self.items.len());
        self.items
            .focus()
            .narrow(i..)
            .into_iter()
            .map(|x| x.as_ref())
    }
}

impl<'a, T> IntoIterator for &'a History<T> {
    type Item = &'a T;
    type IntoIter = std::iter::Map<
        imbl::vector::Iter<'a, Arc<T>, imbl::shared_ptr::DefaultSharedPtr>,
        fn(&'a Arc<T>) -> &'a T,
    >;
    fn into_iter(self) -> Self::IntoIter {
        self.items.iter().map(|x| x.as_ref())
    }
}

impl<T> std::ops::Index<usize> for History<T> {
    type Output = T;
    fn index(&self, i: usize) -> &T {
        &self.items[i]
    }
}

/// Timed readings kept for a cursor, at most `max`: past that, the older half is thinned to
/// every other reading, so recent readings stay exact and old history grows sparser, never
/// unbounded. Readings are shared (`Arc`): the store's model snapshots do not copy them.
#[derive(Debug, Clone)]
pub struct Thinned<T> {
    readings: VecDeque<(u64, Arc<T>)>,
    max: usize,
}

impl<T> Thinned<T> {
    /// Empty, keeping at most `max`.
    pub fn new(max: usize) -> Self {
        Thinned {
            readings: VecDeque::new(),
            max,
        }
    }

    /// Keep `x`, read at `t` (times ascending).
    pub fn push(&mut self, t: u64, x: T) {
        self.readings.push_back((t, Arc::new(x)));
        if self.readings.len() > self.max {
            let half = self.readings.len() / 2;
            let mut k = 0;
            self.readings.retain(|_| {
                k += 1;
                k > half || k % 2 == 1
            });
        }
    }

    /// The newest `n` readings alone (bounded as this one): a copy that pins no more of them.
    pub fn newest(&self, n: usize) -> Self {
        let skip = self.readings.len().saturating_sub(n);
        Thinned {
            readings: self.readings.iter().skip(skip).cloned().collect(),
            max: self.max,
        }
    }

    /// The newest reading and its time.
    pub fn latest(&self) -> Option<(u64, &T)> {
        self.readings.back().map(|(t, x)| (*t, x.as_ref()))
    }

    /// The kept reading nearest `t` (the newer on a tie) and its time.
    pub fn nearest(&self, t: u64) -> Option<(u64, &T)> {
        let i = self.readings.partition_point(|(u, _)| *u < t);
        let after = self.readings.get(i);
        let before = i.checked_sub(1).and_then(|j| self.readings.get(j));
        let best = match (before, after) {
            (Some(b), Some(a)) => {
                if t - b.0 < a.0 - t {
                    b
                } else {
                    a
                }
            }
            (Some(x), None) | (None, Some(x)) => x,
            (None, None) => return None,
        };
        Some((best.0, best.1.as_ref()))
    }

    /// The newest reading at or before `t`.
    pub fn at_or_before(&self, t: u64) -> Option<(u64, &T)> {
        let i = self.readings.partition_point(|(u, _)| *u <= t);
        let (at, x) = self.readings.get(i.checked_sub(1)?)?;
        Some((*at, x.as_ref()))
    }

    /// Readings kept.
    pub fn len(&self) -> usize {
        self.readings.len()
    }

    /// Whether none is kept.
    pub fn is_empty(&self) -> bool {
        self.readings.is_empty()
    }

    /// Bytes held by the queue itself (the readings are shared).
    pub fn heap_bytes(&self) -> usize {
        self.readings.capacity() * std::mem::size_of::<(u64, Arc<T>)>()
    }

    /// Bytes the readings hold, each measured by `size` (what one holds on the heap besides
    /// its own size).
    pub fn readings_bytes(&self, size: impl Fn(&T) -> usize) -> usize {
        self.readings
            .iter()
            .map(|(_, x)| std::mem::size_of::<T>() + size(x))
            .sum()
    }
}
