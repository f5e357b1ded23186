//! What one figure of one session is: its key (the row name and `--fail-if` metric), words,
//! section, unit, and its value or the reason there is none; and [`Figures`], the list a
//! summary's sections push onto in table order.

/// What a figure counts in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Bytes,
    Seconds,
    /// A plain number (proofs).
    Count,
    /// Sectors per hour.
    PerHour,
    /// Percent of wall time (pressure).
    Percent,
}

impl Unit {
    /// The unit as the JSON and CSV outputs name it.
    pub fn name(self) -> &'static str {
        match self {
            Unit::Bytes => "bytes",
            Unit::Seconds => "seconds",
            Unit::Count => "count",
            Unit::PerHour => "per_hour",
            Unit::Percent => "percent",
        }
    }
}

/// The section a figure is listed under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Section {
    Memory,
    Proofs,
    Mode,
    Phase,
    Kernel,
}

impl Section {
    /// Its title in the table.
    pub fn title(self) -> &'static str {
        match self {
            Section::Memory => "memory",
            Section::Proofs => "proofs",
            Section::Mode => "per batch mode",
            Section::Phase => "per phase",
            Section::Kernel => "kernel",
        }
    }
}

/// One figure of one session.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    /// Row name (and `--fail-if` metric).
    pub key: String,
    /// What it is, in words.
    pub label: String,
    pub section: Section,
    pub unit: Unit,
    /// The value, or why there is none in this session.
    pub value: Result<f64, String>,
    /// What a session without this row lacks ("no sps proofs").
    pub absent: String,
    /// A threshold-phase row (shown only when some session has no prover events).
    pub threshold_row: bool,
}

/// The figures of one summary, in the order they are pushed (the table's order).
#[derive(Default)]
pub(super) struct Figures(pub(super) Vec<Figure>);

impl Figures {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn push(
        &mut self,
        key: impl Into<String>,
        label: impl Into<String>,
        section: Section,
        unit: Unit,
        value: Result<f64, String>,
        absent: impl Into<String>,
        threshold_row: bool,
    ) {
        self.0.push(Figure {
            key: key.into(),
            label: label.into(),
            section,
            unit,
            value,
            absent: absent.into(),
            threshold_row,
        });
    }
}
