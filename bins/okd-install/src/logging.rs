//! Logging in openshift-install's formats (openshift/installer
//! `cmd/openshift-install/main.go`, `command/log.go`): stderr gets
//! `level=info msg=…` (or `INFO …` in colour on a terminal) at the chosen level;
//! `<dir>/.openshift_install.log` is appended at debug level in logrus text
//! format with a timestamp. Structured fields of an event follow its message
//! as ` key=value`. Events of other crates (hyper, hickory, rustls) are shown
//! only at warning level and above unless the level is debug or trace.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::Mutex;

use tracing::{Event, Level, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::{Context, SubscriberExt};

/// The log file in the asset directory.
const LOG_FILE: &str = ".openshift_install.log";
/// Its mode: it holds debug output about the cluster, so not world-readable.
const LOG_MODE: u32 = 0o640;

struct Sink {
    console_level: Level,
    tty: bool,
    file: Option<Mutex<std::fs::File>>,
}

fn level_name(l: &Level) -> &'static str {
    match *l {
        Level::ERROR => "error",
        Level::WARN => "warning",
        Level::INFO => "info",
        Level::DEBUG => "debug",
        Level::TRACE => "trace",
    }
}

/// The message and the other fields (` key=value`, values with spaces quoted).
#[derive(Default)]
struct Msg(String, String);

impl Msg {
    fn field(&mut self, name: &str, value: String) {
        if name == "message" {
            self.0 = value;
        } else if value.contains([' ', '"']) || value.is_empty() {
            self.1 += &format!(" {name}={value:?}");
        } else {
            self.1 += &format!(" {name}={value}");
        }
    }
}

impl tracing::field::Visit for Msg {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.field(field.name(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.field(field.name(), value.to_string());
    }
}

/// Whether an event comes from our own crates (`okd_*`, the binary).
fn ours(target: &str) -> bool {
    target.starts_with("okd_") || target.starts_with("okd-")
}

impl<S: Subscriber> Layer<S> for Sink {
    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        let mut m = Msg::default();
        event.record(&mut m);
        let lvl = *event.metadata().level();
        if !ours(event.metadata().target())
            && lvl > Level::WARN
            && self.console_level < Level::DEBUG
        {
            return;
        }
        // One event is one line: control characters (newlines, escape
        // sequences) from values read out of user files are escaped, so they
        // can neither forge log lines nor drive the terminal.
        let line = escape_controls(&(m.0 + &m.1));
        if lvl <= self.console_level {
            let mut err = std::io::stderr().lock();
            if self.tty {
                let (color, name) = match lvl {
                    Level::ERROR => ("31", "ERROR"),
                    Level::WARN => ("33", "WARNING"),
                    Level::INFO => ("36", "INFO"),
                    _ => ("37", "DEBUG"),
                };
                let _ = writeln!(err, "\x1b[{color}m{name}\x1b[0m {line}");
            } else {
                let _ = writeln!(err, "level={} msg={line}", level_name(&lvl));
            }
        }
        if let Some(f) = &self.file {
            let ts = time::OffsetDateTime::now_utc()
                .format(&time::format_description::well_known::Rfc3339)
                .unwrap_or_default();
            // Inside logrus's quoted msg="…": backslash and quote escaped too.
            let quoted = line.replace('\\', "\\\\").replace('"', "\\\"");
            if let Ok(mut f) = f.lock() {
                let _ = writeln!(
                    f,
                    "time=\"{ts}\" level={} msg=\"{quoted}\"",
                    level_name(&lvl)
                );
            }
        }
    }
}

/// Escapes the Unicode control characters (C0 but tab, DEL, C1) of `s` as
/// `\n`, `\r` or `\u{..}`; other characters, including backslashes, are kept.
fn escape_controls(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push(c),
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
            c => out.push(c),
        }
    }
    out
}

/// Parses `--log-level` (debug|info|warn|error).
pub(crate) fn parse_level(s: &str) -> Result<Level, String> {
    match s {
        "trace" => Ok(Level::TRACE),
        "debug" => Ok(Level::DEBUG),
        "info" => Ok(Level::INFO),
        "warn" | "warning" => Ok(Level::WARN),
        "error" => Ok(Level::ERROR),
        _ => Err(format!(
            "invalid log-level {s:?}: use debug, info, warn or error"
        )),
    }
}

/// Installs the global subscriber; `dir` gets the log file when given.
pub(crate) fn init(level: Level, dir: Option<&Path>) -> anyhow::Result<()> {
    let file = match dir {
        Some(d) => {
            // The first write of a run: a new --dir is 0750 and the log 0640
            // from their creation, whatever the umask (openshift/installer
            // `pkg/asset/store/store.go`).
            okd_fs::create_dir_all(d, okd_fs::DIR_MODE)?;
            Some(Mutex::new(okd_fs::open_append(
                &d.join(LOG_FILE),
                LOG_MODE,
            )?))
        }
        None => None,
    };
    let sink = Sink {
        console_level: level,
        tty: std::io::stderr().is_terminal(),
        file,
    };
    // The Kubernetes client stack logs each request (and each failed one at
    // error level); okd-install reports those failures itself, by cause.
    let quiet = tracing_subscriber::filter::Targets::new()
        .with_default(Level::TRACE)
        .with_target("kube_client", tracing_subscriber::filter::LevelFilter::OFF)
        .with_target("kube_runtime", tracing_subscriber::filter::LevelFilter::OFF)
        .with_target("tower", tracing_subscriber::filter::LevelFilter::OFF)
        .with_target("hyper", tracing_subscriber::filter::LevelFilter::OFF)
        .with_target("hyper_util", tracing_subscriber::filter::LevelFilter::OFF)
        .with_target("h2", tracing_subscriber::filter::LevelFilter::OFF)
        .with_target("rustls", tracing_subscriber::filter::LevelFilter::OFF);
    let subscriber = tracing_subscriber::registry().with(sink.with_filter(quiet));
    tracing::subscriber::set_global_default(subscriber)?;
    Ok(())
}
