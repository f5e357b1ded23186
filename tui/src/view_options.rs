//! The view's cycles, each a key's: the process table's sort column (`s`), what the log pane
//! shows (`o`), the memory chart's vertical axis (`y`) and what the per-GPU memory rows are
//! drawn against (`Y`).

/// The memory chart's vertical axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemAxis {
    /// Linear from 0.
    Linear,
    /// Logarithmic: a small series beside a large one keeps its shape.
    Log,
    /// Split: the lower half linear up to where the small values lie, the upper half linear
    /// from there to the top.
    Split,
}

impl MemAxis {
    /// The next axis of the cycle.
    pub fn next(self) -> MemAxis {
        match self {
            MemAxis::Linear => MemAxis::Log,
            MemAxis::Log => MemAxis::Split,
            MemAxis::Split => MemAxis::Linear,
        }
    }
}

/// What a GPU's memory row is drawn against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpuScale {
    /// The card's total memory.
    Card,
    /// The largest value seen on any GPU in the session so far.
    Seen,
}

/// The process table's sort column (`s` cycles): the largest first, pid the smallest
/// first, `tree` the reading's own order (root first, children under their parent).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcSort {
    Rss,
    Cores,
    Gpu,
    Threads,
    Pid,
    Tree,
}

impl ProcSort {
    /// The next column of the cycle.
    pub fn next(self) -> ProcSort {
        match self {
            ProcSort::Rss => ProcSort::Cores,
            ProcSort::Cores => ProcSort::Gpu,
            ProcSort::Gpu => ProcSort::Threads,
            ProcSort::Threads => ProcSort::Pid,
            ProcSort::Pid => ProcSort::Tree,
            ProcSort::Tree => ProcSort::Rss,
        }
    }

    /// Its name in the table's title.
    pub fn name(self) -> &'static str {
        match self {
            ProcSort::Rss => "rss",
            ProcSort::Cores => "cores",
            ProcSort::Gpu => "gpu",
            ProcSort::Threads => "threads",
            ProcSort::Pid => "pid",
            ProcSort::Tree => "tree",
        }
    }
}

/// What the log pane shows (`o` cycles).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFilter {
    /// Everything.
    All,
    /// Only the child's output lines (and a followed log's).
    Output,
    /// Only provetop's own entries: events, alerts, marks, controls.
    Monitor,
}

impl LogFilter {
    /// The next filter of the cycle.
    pub fn next(self) -> LogFilter {
        match self {
            LogFilter::All => LogFilter::Output,
            LogFilter::Output => LogFilter::Monitor,
            LogFilter::Monitor => LogFilter::All,
        }
    }

    /// Its name in the pane's title.
    pub fn name(self) -> &'static str {
        match self {
            LogFilter::All => "all",
            LogFilter::Output => "output",
            LogFilter::Monitor => "provetop",
        }
    }

    /// Whether an entry passes.
    pub fn shows(self, what: &crate::model::Logged) -> bool {
        let output = matches!(what, crate::model::Logged::Output(_));
        match self {
            LogFilter::All => true,
            LogFilter::Output => output,
            LogFilter::Monitor => !output,
        }
    }
}
