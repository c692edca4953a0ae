//! Byte counters for long transfers (image pulls, mirroring): a redrawn bar on a terminal;
//! elsewhere (CI, `kubectl logs`) a log line every [`LINE_INTERVAL`], so that a log shows a
//! long copy advancing without filling up with redraws, in the log's format (text or JSON). A
//! transfer shorter than the interval logs nothing.
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle, TermLike};
use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub(crate) const LINE_INTERVAL: Duration = Duration::from_secs(10);

const LINE_TEMPLATE: &str = "{msg}: {bytes}/{total_bytes} ({percent}%), {bytes_per_sec}, {elapsed}";

/// A counter of `len` bytes labelled `message`; `bar_template` is its look on a terminal.
pub fn bytes(bar_template: &str, message: String, len: u64) -> ProgressBar {
    let (bar, template) = if std::io::stderr().is_terminal() {
        (ProgressBar::new(len), bar_template)
    } else {
        let lines = PlainLines::new(Box::new(|line| tracing::info!("{line}")), LINE_INTERVAL);
        // One redraw a second is plenty for a line printed every few seconds.
        let target = ProgressDrawTarget::term_like_with_hz(Box::new(lines), 1);
        (
            ProgressBar::with_draw_target(Some(len), target),
            LINE_TEMPLATE,
        )
    };
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style);
    }
    bar.set_message(message);
    bar
}

type LineSink = Box<dyn Fn(&str) + Send + Sync>;

/// A terminal that is not one: indicatif's redraws (cursor moves, padding, one write per
/// piece) collapse to the text of the bar, handed to `out` as one line at most once per
/// interval.
struct PlainLines {
    out: LineSink,
    state: Mutex<(String, Instant)>,
    interval: Duration,
}

impl PlainLines {
    fn new(out: LineSink, interval: Duration) -> PlainLines {
        PlainLines {
            out,
            state: Mutex::new((String::new(), Instant::now())),
            interval,
        }
    }
}

impl std::fmt::Debug for PlainLines {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PlainLines")
    }
}

impl TermLike for PlainLines {
    fn width(&self) -> u16 {
        // Wide enough that indicatif never wraps or cuts the line.
        400
    }

    fn move_cursor_up(&self, _: usize) -> std::io::Result<()> {
        Ok(())
    }

    fn move_cursor_down(&self, _: usize) -> std::io::Result<()> {
        Ok(())
    }

    fn move_cursor_right(&self, _: usize) -> std::io::Result<()> {
        Ok(())
    }

    fn move_cursor_left(&self, _: usize) -> std::io::Result<()> {
        Ok(())
    }

    fn write_line(&self, s: &str) -> std::io::Result<()> {
        self.write_str(s)
    }

    fn write_str(&self, s: &str) -> std::io::Result<()> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state.0.push_str(s);
        Ok(())
    }

    fn clear_line(&self) -> std::io::Result<()> {
        Ok(())
    }

    fn flush(&self) -> std::io::Result<()> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let (pending, last) = &mut *state;
        let line = pending.trim().to_owned();
        pending.clear();
        if line.is_empty() || last.elapsed() < self.interval {
            return Ok(());
        }
        *last = Instant::now();
        drop(state);
        (self.out)(&line);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn redraw(term: &PlainLines, text: &str) {
        term.move_cursor_up(0).unwrap();
        term.write_str("\r").unwrap();
        term.clear_line().unwrap();
        term.write_str(text).unwrap();
        term.write_str("      ").unwrap();
        term.flush().unwrap();
    }

    #[test]
    fn redraws_become_plain_lines_at_most_once_per_interval() {
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = |lines: &Arc<Mutex<Vec<String>>>| -> LineSink {
            let lines = lines.clone();
            Box::new(move |line| lines.lock().unwrap().push(line.to_owned()))
        };
        let every_time = PlainLines::new(sink(&lines), Duration::ZERO);
        redraw(&every_time, "layer: 1 KiB/4 KiB (25%)");
        redraw(&every_time, "layer: 4 KiB/4 KiB (100%)");
        let rarely = PlainLines::new(sink(&lines), Duration::from_secs(3600));
        redraw(&rarely, "never printed: the interval has not passed");
        assert_eq!(
            *lines.lock().unwrap(),
            ["layer: 1 KiB/4 KiB (25%)", "layer: 4 KiB/4 KiB (100%)"]
        );
    }
}
