//! The progress bar (indicatif): requests done, current rate and errors. Hidden when stderr is
//! not a terminal or `--no-progress` is given.

use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

#[derive(Clone)]
pub struct Progress {
    bar: ProgressBar,
    by_ops: bool,
}

impl Progress {
    /// Counts requests when the run is bounded by `max_ops`, else seconds of `duration`.
    pub fn new(label: &str, max_ops: u64, duration: Duration, visible: bool) -> Self {
        let by_ops = max_ops != u64::MAX;
        let len = if by_ops {
            max_ops
        } else {
            duration.as_secs().max(1)
        };
        let bar = ProgressBar::with_draw_target(
            Some(len),
            if visible {
                ProgressDrawTarget::stderr()
            } else {
                ProgressDrawTarget::hidden()
            },
        );
        let unit = if by_ops { "ops" } else { "s" };
        bar.set_style(
            ProgressStyle::with_template(&format!(
                "{label} [{{elapsed_precise}}] {{wide_bar}} {{pos}}/{{len}} {unit} {{msg}}"
            ))
            .expect("valid template"),
        );
        Progress { bar, by_ops }
    }

    pub fn update(&self, done: u64, errors: u64, elapsed: Duration) {
        let secs = elapsed.as_secs_f64().max(1e-3);
        self.bar
            .set_position(if self.by_ops { done } else { elapsed.as_secs() });
        self.bar
            .set_message(format!("{:.0} ops/s, {errors} errors", done as f64 / secs));
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
