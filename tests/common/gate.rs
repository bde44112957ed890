//! A client whose commands can be paused in driver command monitoring: the process is stopped
//! at that point (as by a VM pause or SIGSTOP), not killed, and resumes when the test says.
#![allow(dead_code)]

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use mongodb::event::command::CommandEvent;
use mongodb::event::EventHandler;
use mongodb::options::ClientOptions;
use mongodb::Client;

/// When in a command's life a hold applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Before the command is sent.
    Started,
    /// After its reply came back, before the caller sees it.
    Succeeded,
}

type Point = (Phase, String);

#[derive(Default)]
struct State {
    /// Holds that the next matching event takes.
    armed: Vec<Point>,
    /// Events currently held.
    held: Vec<Point>,
    /// Releases not yet taken by their held event.
    released: Vec<Point>,
    /// Every event seen, in order.
    seen: Vec<Point>,
}

/// The hold points of one client. A held event blocks the thread that runs the command (the
/// whole task stands still, its timers and lease renewals included): use a multi-threaded
/// runtime with a thread to spare. A hold gives up by itself after 60 s.
#[derive(Clone, Default)]
pub struct Gate {
    shared: Arc<(Mutex<State>, Condvar)>,
}

impl Gate {
    /// A client for `uri` whose command events pass through a new gate.
    pub async fn client(uri: &str) -> (Client, Gate) {
        let gate = Gate::default();
        (gate.connect(uri).await, gate)
    }

    /// A client for `uri` whose command events pass through this gate (create it on the runtime
    /// that will use it).
    pub async fn connect(&self, uri: &str) -> Client {
        let mut options = ClientOptions::parse(uri).await.expect("a valid URI");
        let handler = self.clone();
        options.command_event_handler = Some(EventHandler::callback(move |event| match event {
            CommandEvent::Started(e) => handler.pass(Phase::Started, &e.command_name),
            CommandEvent::Succeeded(e) => handler.pass(Phase::Succeeded, &e.command_name),
            CommandEvent::Failed(_) => {}
            _ => {}
        }));
        Client::with_options(options).expect("a client")
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.shared.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn pass(&self, phase: Phase, name: &str) {
        let point = (phase, name.to_owned());
        let cvar = &self.shared.1;
        let mut state = self.state();
        state.seen.push(point.clone());
        cvar.notify_all();
        let Some(at) = state.armed.iter().position(|p| p == &point) else {
            return;
        };
        state.armed.remove(at);
        state.held.push(point.clone());
        cvar.notify_all();
        let give_up = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(at) = state.released.iter().position(|p| p == &point) {
                state.released.remove(at);
                break;
            }
            let left = give_up.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            state = cvar
                .wait_timeout(state, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        if let Some(at) = state.held.iter().position(|p| p == &point) {
            state.held.remove(at);
        }
        cvar.notify_all();
    }

    /// Holds the next `name` command at `phase`.
    pub fn hold(&self, phase: Phase, name: &str) {
        self.state().armed.push((phase, name.to_owned()));
    }

    /// Lets the held `name` command at `phase` go on.
    pub fn release(&self, phase: Phase, name: &str) {
        self.state().released.push((phase, name.to_owned()));
        self.shared.1.notify_all();
    }

    /// How many `name` events of `phase` were seen.
    pub fn count(&self, phase: Phase, name: &str) -> usize {
        self.state()
            .seen
            .iter()
            .filter(|(p, n)| *p == phase && n == name)
            .count()
    }

    /// Waits (without blocking the runtime) until `name` is held at `phase`; fails the test
    /// after `timeout`.
    pub async fn held(&self, phase: Phase, name: &str, timeout: Duration) {
        let name = name.to_owned();
        self.wait(timeout, format!("{name} held at {phase:?}"), move |s| {
            s.held.contains(&(phase, name.clone()))
        })
        .await
    }

    /// Waits until `count` `name` events of `phase` were seen; fails the test after `timeout`.
    pub async fn seen(&self, phase: Phase, name: &str, count: usize, timeout: Duration) {
        let name = name.to_owned();
        self.wait(timeout, format!("{count} {name} at {phase:?}"), move |s| {
            s.seen
                .iter()
                .filter(|(p, n)| *p == phase && *n == name)
                .count()
                >= count
        })
        .await
    }

    async fn wait(
        &self,
        timeout: Duration,
        what: String,
        done: impl Fn(&State) -> bool + Send + 'static,
    ) {
        let gate = self.clone();
        let reached = tokio::task::spawn_blocking(move || {
            let give_up = Instant::now() + timeout;
            let mut state = gate.state();
            while !done(&state) {
                let left = give_up.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return false;
                }
                state = gate
                    .shared
                    .1
                    .wait_timeout(state, left)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
            true
        })
        .await
        .expect("the wait does not panic");
        assert!(reached, "{what}: not reached within {timeout:?}");
    }
}
