//! What a command shows on standard error while it runs: the library's progress events
//! ([`crate::PROGRESS_TARGET`]) as a bar on a terminal and as plain lines otherwise, and its
//! warnings and errors as lines.
//!
//! A warning or error whose event carries `in_result = true` is one the command's result carries
//! too (`apply`'s report: a note, a warning, what is missing; or the error it returns): it is
//! not printed here, so a message is shown once. Services' logs still get it.
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
    /// `in_result = true`: the command's result says it too.
    in_result: bool,
}

impl Visit for Fields {
    fn record_bool(&mut self, field: &Field, value: bool) {
        if field.name() == "in_result" {
            self.in_result = value;
        }
    }

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
        if !metadata.target().starts_with("mongo_schema") {
            return;
        }
        let mut fields = Fields::default();
        event.record(&mut fields);
        if metadata.target() == crate::PROGRESS_TARGET {
            self.0.show(fields);
        } else if let Some(line) = line_of(*metadata.level(), &fields) {
            let _ = writeln!(std::io::stderr(), "{line}");
        }
    }
}

/// The line another event of the library prints: its warnings and errors, but those the
/// command's result carries too (`in_result`).
fn line_of(level: Level, fields: &Fields) -> Option<String> {
    if level > Level::WARN || fields.in_result {
        return None;
    }
    let label = if level == Level::ERROR {
        "error"
    } else {
        "warning"
    };
    Some(format!("{label}: {}", fields.message))
}

/// A subscriber that shows `progress` and the library's warnings while a command's future
/// runs (it is that future's default subscriber only, not the process's).
pub(crate) fn subscriber(progress: Arc<Progress>) -> tracing::Dispatch {
    tracing::Dispatch::new(tracing_subscriber::registry().with(Shown(progress)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fields a real event of each kind carries, read as the layer reads them.
    fn fields_of(emit: impl FnOnce()) -> Fields {
        struct Keep(Arc<Mutex<Option<Fields>>>);
        impl<S: Subscriber> Layer<S> for Keep {
            fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
                let mut fields = Fields::default();
                event.record(&mut fields);
                *self.0.lock().unwrap() = Some(fields);
            }
        }
        let kept = Arc::new(Mutex::new(None));
        let subscriber = tracing_subscriber::registry().with(Keep(kept.clone()));
        tracing::subscriber::with_default(subscriber, emit);
        let fields = kept.lock().unwrap().take();
        fields.expect("an event")
    }

    #[test]
    fn a_warning_the_result_carries_is_not_printed_again() {
        let carried = fields_of(|| tracing::warn!(in_result = true, "serving on"));
        assert!(carried.in_result);
        assert_eq!(line_of(Level::WARN, &carried), None);
        // the control: a warning the result does not carry is printed, as is an error
        let own = fields_of(|| tracing::warn!(attempt = 2, "the lease may have lapsed"));
        assert!(!own.in_result);
        assert_eq!(
            line_of(Level::WARN, &own).as_deref(),
            Some("warning: the lease may have lapsed")
        );
        let error = fields_of(|| tracing::error!("no server"));
        assert_eq!(
            line_of(Level::ERROR, &error).as_deref(),
            Some("error: no server")
        );
        assert_eq!(line_of(Level::INFO, &own), None);
    }
}
