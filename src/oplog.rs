//! Logs: stderr, plus (for a renewal) the operation's log file
//! `state/log/<ID>.log` (0600). Writes never fail the run: a closed stderr
//! (the SSH session went away) is ignored.

use std::fs::File;
use std::io::Write;
use std::sync::Mutex;

static FILE: Mutex<Option<File>> = Mutex::new(None);

/// Tee every log line to this file from now on.
pub fn set_file(f: File) {
    if let Ok(mut g) = FILE.lock() {
        *g = Some(f);
    }
}

pub struct Tee;

impl Write for Tee {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let _ = std::io::stderr().write_all(buf);
        if let Ok(mut g) = FILE.lock() {
            if let Some(f) = g.as_mut() {
                let _ = f.write_all(buf);
            }
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

pub fn make_writer() -> Tee {
    Tee
}
