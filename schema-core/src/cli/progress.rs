//! What a command shows on standard error while it runs: the library's progress events
//! ([`crate::PROGRESS_TARGET`]) as a bar on a terminal and as plain lines otherwise, and its
//! warnings and errors as lines.
//!
//! On a terminal the bars are transient: once the command has its result they are cleared, so
//! that what ran is shown once, by the command's own output (`[3/9] create collection ...`),
//! not a second time by a finished bar above it (whose last line the output would also run
//! into). A command that fails keeps its bars where they stopped, beside the error.

use std::collections::HashMap;
use std::fmt::{self, Write as _};
use std::io::{IsTerminal, Write as _};
use std::sync::{Arc, Mutex};

use indicatif::{ProgressBar, ProgressStyle};
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt as _};

/// The fields of one event.
#[derive(Default)]
struct Fields {
    task: Option<String>,
    done: Option<u64>,
    total: Option<u64>,
    message: String,
}

impl Visit for Fields {
    fn record_u64(&mut self, field: &Field, value: u64) {
        match field.name() {
            "done" => self.done = Some(value),
            "total" => self.total = Some(value),
            _ => {}
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.record_u64(field, value.max(0) as u64);
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "task" => self.task = Some(value.to_owned()),
            "message" => self.message = value.to_owned(),
            _ => {}
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        match field.name() {
            "message" => {
                let _ = write!(self.message, "{value:?}");
            }
            "task" => self.task = Some(format!("{value:?}")),
            _ => {}
        }
    }
}

/// Turns progress events into bars or lines.
pub(crate) struct Progress {
    terminal: bool,
    bars: Mutex<HashMap<String, ProgressBar>>,
}

impl Progress {
    pub(crate) fn new() -> Self {
        Progress {
            terminal: std::io::stderr().is_terminal(),
            bars: Mutex::new(HashMap::new()),
        }
    }

    fn show(&self, mut fields: Fields) {
        // one line: an action's indented continuation lines joined with `; `
        fields.message = fields
            .message
            .replacen(":\n    ", ": ", 1)
            .replace("\n    ", "; ")
            .replace('\n', " ");
        let task = fields.task.unwrap_or_default();
        let done = fields.done.unwrap_or(0);
        if !self.terminal {
            let count = match fields.total {
                Some(total) => format!("{done}/{total}"),
                None => done.to_string(),
            };
            let _ = writeln!(std::io::stderr(), "{task} [{count}] {}", fields.message);
            return;
        }
        let mut bars = self.bars.lock().unwrap_or_else(|e| e.into_inner());
        let bar = bars.entry(task.clone()).or_insert_with(|| {
            let bar = match fields.total {
                Some(total) => ProgressBar::new(total).with_style(
                    ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} {wide_msg}")
                        .unwrap_or_else(|_| ProgressStyle::default_bar())
                        .progress_chars("=> "),
                ),
                None => ProgressBar::new_spinner().with_style(
                    ProgressStyle::with_template("{prefix} {spinner} {pos} {wide_msg}")
                        .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                ),
            };
            bar.with_prefix(task.clone())
        });
        // the message first: the new count is never drawn beside the previous action's message
        bar.set_message(fields.message);
        bar.set_position(done);
    }

    /// Ends the bars of a command that has its result: cleared when it `succeeded` (its output
    /// lists what ran), kept where they stopped when it failed.
    pub(crate) fn finish(&self, succeeded: bool) {
        let mut kept = false;
        for (_, bar) in self.bars.lock().unwrap_or_else(|e| e.into_inner()).drain() {
            if succeeded {
                bar.finish_and_clear();
            } else {
                bar.abandon();
                kept = true;
            }
        }
        if kept {
            // the last bar's line is left open: the error goes on the next one
            let _ = writeln!(std::io::stderr());
        }
    }
}

/// The layer of [`subscriber`].
struct Shown(Arc<Progress>);

impl<S: Subscriber> Layer<S> for Shown {
    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        let metadata = event.metadata();
        let ours = metadata.target().starts_with("mongo_schema");
        if !ours {
            return;
        }
        let mut fields = Fields::default();
        event.record(&mut fields);
        if metadata.target() == crate::PROGRESS_TARGET {
            self.0.show(fields);
        } else if *metadata.level() <= Level::WARN {
            let level = if *metadata.level() == Level::ERROR {
                "error"
            } else {
                "warning"
            };
            let _ = writeln!(std::io::stderr(), "{level}: {}", fields.message);
        }
    }
}

/// A subscriber that shows `progress` and the library's warnings while a command's future
/// runs (it is that future's default subscriber only, not the process's).
pub(crate) fn subscriber(progress: Arc<Progress>) -> tracing::Dispatch {
    tracing::Dispatch::new(tracing_subscriber::registry().with(Shown(progress)))
}
