//! A stage's request to end the run cleanly: "stop here, the run is complete" (docs/executor.md,
//! "A stage that ends the run: stop").

use std::sync::Mutex;

/// The longest stop reason kept, in characters: it is one line of the console and the manifest.
pub const MAX_STOP_REASON: usize = 512;

/// One stage's stop request, read by the scheduler once the stage has ended. A request counts
/// only when the stage then succeeds.
#[derive(Debug)]
pub(crate) struct StopRequest {
    /// The run was started with `--force`: every request is refused.
    refused: bool,
    reason: Mutex<Option<String>>,
}

impl StopRequest {
    pub(crate) fn new(refused: bool) -> Self {
        Self {
            refused,
            reason: Mutex::new(None),
        }
    }

    /// Records the request; false when the run refuses stops. The first reason is kept: it is
    /// the one the stage acted on.
    pub(crate) fn request(&self, reason: &str) -> bool {
        if self.refused {
            return false;
        }
        if let Ok(mut slot) = self.reason.lock()
            && slot.is_none()
        {
            *slot = Some(one_line(reason));
        }
        true
    }

    /// The reason, if the stage asked.
    pub(crate) fn take(&self) -> Option<String> {
        self.reason.lock().ok().and_then(|mut slot| slot.take())
    }
}

/// The reason as one line of at most [`MAX_STOP_REASON`] characters: it is printed as a console
/// line and a platform's run-level line, where a line break must not start anything.
fn one_line(reason: &str) -> String {
    let flat = reason.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(MAX_STOP_REASON) {
        Some((cut, _)) => format!("{}…", &flat[..cut]),
        None => flat,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_reason_is_kept_as_one_line() {
        let stop = StopRequest::new(false);
        assert!(stop.request("nothing\nnew"));
        assert!(stop.request("another"));
        assert_eq!(stop.take().as_deref(), Some("nothing new"));
        assert_eq!(stop.take(), None);
    }

    #[test]
    fn a_forced_run_refuses() {
        let stop = StopRequest::new(true);
        assert!(!stop.request("nothing new"));
        assert_eq!(stop.take(), None);
    }

    #[test]
    fn a_long_reason_is_cut() {
        let stop = StopRequest::new(false);
        stop.request(&"é".repeat(MAX_STOP_REASON + 10));
        let kept = stop.take().unwrap_or_default();
        assert_eq!(kept.chars().count(), MAX_STOP_REASON + 1);
        assert!(kept.ends_with('…'));
    }
}
