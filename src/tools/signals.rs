//! Cancellation: SIGTERM and SIGINT set a flag that every step and every wait
//! loop checks; SIGHUP is ignored (the SSH session going away must not stop a
//! renewal half-way). SIGPIPE is already ignored by the Rust runtime, so a
//! closed stdout or stderr only makes writes fail, which we ignore.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    pub fn new() -> Cancel {
        Cancel::default()
    }
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
    /// What SIGTERM does (the handler sets the same flag), for tests.
    #[cfg(test)]
    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst)
    }
}

/// Install the handlers for a renewal: SIGTERM/SIGINT cancel, SIGHUP ignored.
pub fn install() -> Cancel {
    let c = Cancel::new();
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        let _ = signal_hook::flag::register(sig, Arc::clone(&c.0));
    }
    // A registered handler replaces the default "terminate" action.
    let _ = signal_hook::flag::register(
        signal_hook::consts::SIGHUP,
        Arc::new(AtomicBool::new(false)),
    );
    c
}
