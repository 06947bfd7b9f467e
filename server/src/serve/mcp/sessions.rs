//! MCP sessions: `initialize` opens one and names it in `Mcp-Session-Id`; later requests
//! carry the name, and `DELETE /mcp` ends it. A session holds no state of its own (every
//! request carries its token and runs its statements alone), so sessions are only names,
//! bounded in number, the least recently used forgotten first.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

/// Sessions kept at most: a client that opens sessions and never ends them cannot grow the
/// server without bound.
const KEPT_SESSIONS: usize = 10_000;

#[derive(Default)]
pub struct Sessions {
    /// Each open session's name and when it was last used.
    open: Mutex<HashMap<String, Instant>>,
}

impl Sessions {
    /// Opens a session; returns its name, 128 random bits that no client can guess.
    pub fn open(&self) -> String {
        let name = format!("{:032x}", rand::random::<u128>());
        let mut open = self.open.lock().expect("sessions lock");
        if open.len() >= KEPT_SESSIONS {
            let oldest = open.iter().min_by_key(|(_, used)| **used);
            if let Some(oldest) = oldest.map(|(name, _)| name.clone()) {
                open.remove(&oldest);
            }
        }
        open.insert(name.clone(), Instant::now());
        name
    }

    /// Whether `name` is open; marks it used.
    pub fn touch(&self, name: &str) -> bool {
        let mut open = self.open.lock().expect("sessions lock");
        match open.get_mut(name) {
            Some(used) => {
                *used = Instant::now();
                true
            }
            None => false,
        }
    }

    /// Ends the session `name`; false if it was not open.
    pub fn end(&self, name: &str) -> bool {
        self.open
            .lock()
            .expect("sessions lock")
            .remove(name)
            .is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_open_are_known_until_ended() {
        let sessions = Sessions::default();
        let first = sessions.open();
        let second = sessions.open();
        assert_ne!(first, second);
        assert_eq!(first.len(), 32);
        assert!(sessions.touch(&first));
        assert!(sessions.end(&first));
        assert!(!sessions.touch(&first));
        assert!(!sessions.end(&first));
        assert!(sessions.touch(&second));
        assert!(!sessions.touch("made-up"));
    }
}
