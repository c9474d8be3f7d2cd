//! The `virsh` child process and the line protocol described in the crate
//! docs: spawning, quoting, writing one command line, and cutting its
//! answer out of the shared stdout/stderr pipe.

use std::borrow::Cow;
use std::ffi::OsStr;
use std::io::{ErrorKind, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::{LibvirtError, VIRSH_PACKAGE};

/// How long [`Virsh`] waits for one command's answer unless
/// [`Virsh::set_timeout`] says otherwise: 300 s (a `start` or a large
/// `vol-create-as` on a real hypervisor can take a while).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// One connection to libvirt: a long-lived `virsh -q -c <uri>` child driven
/// through its interactive shell (see the crate docs for the protocol).
///
/// Commands run one at a time (`&mut self`); the child is killed on drop.
/// After a timeout or an unexpected exit every call returns
/// [`LibvirtError::Closed`].
#[derive(Debug)]
pub struct Virsh {
    uri: String,
    child: Child,
    stdin: ChildStdin,
    chunks: Receiver<Vec<u8>>,
    pending: Vec<u8>,
    tag: String,
    serial: u64,
    echo_newline: bool,
    timeout: Duration,
    closed: bool,
}

/// What one command printed: stdout lines and virsh's `error:` lines.
#[derive(Debug)]
pub(crate) struct Reply {
    /// The command line as sent (quoted for virsh).
    pub(crate) command: String,
    /// Everything but the `error:` lines.
    pub(crate) stdout: String,
    /// The `error:` lines, without the prefix.
    pub(crate) errors: Vec<String>,
}

impl Reply {
    /// The stdout text, or [`LibvirtError::Command`] when virsh printed errors.
    pub(crate) fn ok(self) -> Result<String, LibvirtError> {
        if self.errors.is_empty() {
            Ok(self.stdout)
        } else {
            Err(self.failure())
        }
    }

    /// The errors as a [`LibvirtError::Command`].
    pub(crate) fn failure(self) -> LibvirtError {
        LibvirtError::Command {
            command: self.command,
            message: self.errors.join(": "),
        }
    }

    /// Whether virsh said that the `object` (its word: `domain`, `network`,
    /// `pool`, `vol`) it looked up does not exist: its own line `failed to
    /// get <object> '<name>'`, followed by nothing (test driver) or by
    /// libvirt's `... not found: ...` (real drivers). A lookup that failed for
    /// another reason (a dropped connection) is not "absent".
    pub(crate) fn not_found(&self, object: &str) -> bool {
        let prefix = format!("failed to get {object} '");
        match self.errors.split_first() {
            Some((first, rest)) => {
                first.starts_with(&prefix)
                    && rest
                        .iter()
                        .all(|l| l.to_ascii_lowercase().contains("not found"))
            }
            None => false,
        }
    }
}

impl Virsh {
    /// Starts `virsh -q -c <uri>` (found on `PATH`) and checks the
    /// connection with `uri`.
    ///
    /// `uri` is any libvirt URI: `qemu:///system`, `qemu+ssh://host/system`,
    /// `test:///default`, `test:///<absolute path of a node XML>`.
    ///
    /// Errors: [`LibvirtError::Missing`] when `virsh` is not installed
    /// (Debian package `libvirt-clients`); [`LibvirtError::Connect`] with
    /// virsh's message when the connection fails (no libvirtd socket, a bad
    /// test driver file, ...); [`LibvirtError::Io`] when the child cannot be
    /// started.
    pub fn connect(uri: &str) -> Result<Virsh, LibvirtError> {
        Self::connect_with("virsh", uri, DEFAULT_TIMEOUT)
    }

    /// [`Virsh::connect`] with another `virsh` program (a path, or a name
    /// looked up on `PATH`) and another [`Virsh::timeout`], which also bounds
    /// the connection check. Same errors, and [`LibvirtError::Timeout`] when
    /// the program does not answer.
    pub fn connect_with(
        program: impl AsRef<OsStr>,
        uri: &str,
        timeout: Duration,
    ) -> Result<Virsh, LibvirtError> {
        let program = program.as_ref();
        let io = |action: &str| {
            let action = action.to_owned();
            move |source| LibvirtError::Io { action, source }
        };
        let (reader, writer) = std::io::pipe().map_err(io("creating the pipe for virsh"))?;
        let writer2 = writer
            .try_clone()
            .map_err(io("creating the pipe for virsh"))?;
        let mut child = {
            // The Command holds the pipe's write ends: drop it right after the
            // spawn, so that the reader sees end-of-file when virsh exits.
            let mut command = Command::new(program);
            command
                .args(["-q", "-c", uri])
                .env("LC_ALL", "C")
                // readline echoes input lines, broken at the terminal width
                // (80 without a terminal): make it wide.
                .env("COLUMNS", "16384")
                .stdin(Stdio::piped())
                .stdout(writer)
                .stderr(writer2);
            match command.spawn() {
                Ok(child) => child,
                Err(e) if e.kind() == ErrorKind::NotFound => {
                    return Err(LibvirtError::Missing {
                        program: program.to_string_lossy().into_owned(),
                        package: VIRSH_PACKAGE,
                    });
                }
                Err(source) => {
                    return Err(LibvirtError::Io {
                        action: format!("starting {} -c {uri}", program.to_string_lossy()),
                        source,
                    });
                }
            }
        };
        let stdin = child.stdin.take().expect("stdin is piped");
        let (tx, chunks) = mpsc::channel();
        let spawned = thread::Builder::new()
            .name("virsh-output".into())
            .spawn(move || read_chunks(reader, tx));
        if let Err(source) = spawned {
            let _ = child.kill();
            let _ = child.wait();
            return Err(LibvirtError::Io {
                action: "starting the virsh reader thread".into(),
                source,
            });
        }
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let mut virsh = Virsh {
            uri: uri.to_owned(),
            tag: format!("okd{:x}x{:x}x{nanos:x}", std::process::id(), child.id()),
            child,
            stdin,
            chunks,
            pending: Vec::new(),
            serial: 0,
            echo_newline: false,
            timeout,
            closed: false,
        };
        let reply = match virsh.exchange(&["uri"]) {
            Ok(reply) => reply,
            Err(LibvirtError::Exited { output, .. }) => {
                return Err(LibvirtError::Connect {
                    uri: uri.to_owned(),
                    message: if output.is_empty() {
                        "virsh exited".into()
                    } else {
                        output
                    },
                });
            }
            Err(e) => return Err(e),
        };
        if !reply.errors.is_empty() {
            return Err(LibvirtError::Connect {
                uri: uri.to_owned(),
                message: reply.errors.join(": "),
            });
        }
        // `uri` prints a URI, never a leading blank line: one here is the
        // echo command's own newline (virsh versions differ), to strip from
        // every later answer.
        virsh.echo_newline = reply.stdout.starts_with('\n');
        Ok(virsh)
    }

    /// The libvirt URI this session is connected to, as given.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// How long a command may run before the session is killed.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Sets [`Virsh::timeout`] (default [`DEFAULT_TIMEOUT`]).
    pub fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout;
    }

    /// How many commands this session has sent (the `uri` check included).
    pub fn command_count(&self) -> u64 {
        self.serial
    }

    /// Runs one virsh command, e.g. `run(&["net-list", "--all"])`, and
    /// returns what it printed on stdout (`error:` lines removed).
    ///
    /// Each argument is one word for virsh's parser (quoted here); give
    /// option values as `--name=value`. Interactive commands (`console`,
    /// `edit`) and `quit` are not for this session.
    ///
    /// Errors: [`LibvirtError::Command`] when virsh printed `error:` lines
    /// (their text, and the command line); [`LibvirtError::Argument`] for an
    /// empty `args` or an argument with a control character;
    /// [`LibvirtError::Timeout`], [`LibvirtError::Exited`],
    /// [`LibvirtError::Closed`] when the session is gone.
    pub fn run(&mut self, args: &[&str]) -> Result<String, LibvirtError> {
        self.exchange(args)?.ok()
    }

    /// Sends one command and cuts its answer out of the pipe.
    pub(crate) fn exchange(&mut self, args: &[&str]) -> Result<Reply, LibvirtError> {
        if self.closed {
            return Err(LibvirtError::Closed {
                uri: self.uri.clone(),
            });
        }
        let command = command_line(args)?;
        self.serial += 1;
        let (tag, n) = (&self.tag, self.serial);
        let begin = format!("{tag}B{n}");
        let end = format!("{tag}E{n}");
        let end_echo = format!("echo '{tag}''E{n}'");
        let lines = format!("echo '{tag}''B{n}' ; {command}\n{end_echo}\n");
        let started = Instant::now();
        match self
            .stdin
            .write_all(lines.as_bytes())
            .and_then(|()| self.stdin.flush())
        {
            Ok(()) => {}
            // virsh is gone: what it printed tells why (below).
            Err(e) if e.kind() == ErrorKind::BrokenPipe => {}
            Err(source) => {
                return Err(LibvirtError::Io {
                    action: format!("writing `{command}` to virsh"),
                    source,
                });
            }
        }
        let deadline = started + self.timeout;
        let mut scanned = 0;
        let region = loop {
            if let Some(e) = find(&self.pending[scanned..], end.as_bytes()).map(|i| i + scanned) {
                let region = self.pending[..e].to_vec();
                self.pending.drain(..e + end.len());
                break region;
            }
            scanned = self.pending.len().saturating_sub(end.len());
            let left = deadline.saturating_duration_since(Instant::now());
            match self.chunks.recv_timeout(left) {
                Ok(chunk) => self.pending.extend_from_slice(&chunk),
                Err(RecvTimeoutError::Timeout) => {
                    self.kill();
                    return Err(LibvirtError::Timeout {
                        command,
                        timeout: self.timeout,
                    });
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let text = String::from_utf8_lossy(&self.pending).into_owned();
                    self.kill();
                    return Err(LibvirtError::Exited {
                        command,
                        output: split_output(&text).1.join(": "),
                    });
                }
            }
        };
        let Some(b) = find(&region, begin.as_bytes()) else {
            // virsh refused the whole line while parsing it (unknown command
            // or option): neither the begin marker nor the command ran.
            let text = String::from_utf8_lossy(&region);
            let errors = split_output(&text).1;
            if errors.is_empty() {
                return Err(LibvirtError::Parse {
                    what: command,
                    message: format!("virsh skipped the command without an error: {text:?}"),
                });
            }
            return Ok(Reply {
                command,
                stdout: String::new(),
                errors,
            });
        };
        let text = String::from_utf8_lossy(&region[b + begin.len()..]);
        let text = match text.strip_prefix('\n') {
            Some(rest) if self.echo_newline => rest,
            _ => &text,
        };
        let text = strip_end_echo(text, &end_echo);
        let (stdout, errors) = split_output(text);
        tracing::debug!(
            uri = %self.uri,
            %command,
            errors = errors.len(),
            micros = started.elapsed().as_micros() as u64,
            "virsh"
        );
        Ok(Reply {
            command,
            stdout,
            errors,
        })
    }

    /// Kills and reaps the child; the session is closed.
    fn kill(&mut self) {
        if !self.closed {
            self.closed = true;
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

impl Drop for Virsh {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The reader thread: forwards the pipe's bytes until end-of-file (virsh and
/// everything it started have exited) or until the session is dropped.
fn read_chunks(mut reader: std::io::PipeReader, tx: mpsc::Sender<Vec<u8>>) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match reader.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => {
                if tx.send(buf[..n].to_vec()).is_err() {
                    return;
                }
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

/// Cuts the prompt and readline's echo of the end-marker line (`virsh #
/// echo '…''E<n>'`) off the end of a command's answer. The line is short and
/// the child's `COLUMNS` wide, so readline echoes it unbroken; without any
/// echo only the prompt is cut.
fn strip_end_echo<'a>(text: &'a str, end_echo: &str) -> &'a str {
    let text = text
        .strip_suffix('\n')
        .and_then(|t| t.strip_suffix(end_echo))
        .unwrap_or(text);
    PROMPTS
        .iter()
        .find_map(|p| text.strip_suffix(p))
        .unwrap_or(text)
}

/// virsh's prompts: read-write and read-only connections.
const PROMPTS: [&str; 2] = ["virsh # ", "virsh > "];

/// Splits a command's answer into stdout and its `error: ` lines (prefix
/// removed, trailing whitespace trimmed).
fn split_output(text: &str) -> (String, Vec<String>) {
    let mut stdout = String::with_capacity(text.len());
    let mut errors = Vec::new();
    for line in text.split_inclusive('\n') {
        match line.strip_prefix("error: ") {
            Some(message) => errors.push(message.trim_end().to_owned()),
            None => stdout.push_str(line),
        }
    }
    (stdout, errors)
}

/// The command line for virsh's parser: every argument checked and quoted.
pub(crate) fn command_line(args: &[&str]) -> Result<String, LibvirtError> {
    let Some(first) = args.first() else {
        return Err(LibvirtError::Argument {
            command: String::new(),
            arg: String::new(),
            rule: "is missing: no command given",
        });
    };
    let mut line = String::new();
    for arg in args {
        if arg.chars().any(char::is_control) {
            return Err(LibvirtError::Argument {
                command: (*first).to_owned(),
                arg: (*arg).to_owned(),
                rule: "contains a control character (newline, tab, escape), which virsh's interactive shell would act on",
            });
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(&quote(arg));
    }
    Ok(line)
}

/// One word for virsh's parser (`vshCommandStringGetArg`): left bare when it
/// has only characters the parser treats literally, else single-quoted, an
/// embedded `'` written `'\''` (close, backslash-escaped quote, reopen).
pub(crate) fn quote(arg: &str) -> Cow<'_, str> {
    let bare = !arg.is_empty()
        && arg
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-./:=@%+,".contains(&b));
    if bare {
        Cow::Borrowed(arg)
    } else {
        Cow::Owned(format!("'{}'", arg.replace('\'', r"'\''")))
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strip_end_echo_cuts_prompt_and_echo() {
        let echo = "echo 'okd1''E3'";
        assert_eq!(
            strip_end_echo("a\nb\nvirsh # echo 'okd1''E3'\n", echo),
            "a\nb\n"
        );
        assert_eq!(strip_end_echo("hivirsh # echo 'okd1''E3'\n", echo), "hi");
        assert_eq!(strip_end_echo("a\nvirsh > ", echo), "a\n");
        assert_eq!(strip_end_echo("a\n", echo), "a\n");
    }

    #[test]
    fn quote_leaves_plain_words_bare_and_quotes_the_rest() {
        assert_eq!(quote("--domain=c1-master-0"), "--domain=c1-master-0");
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote(""), "''");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote("a;b"), "'a;b'");
        assert_eq!(quote("<host mac=\"x\"/>"), "'<host mac=\"x\"/>'");
    }

    #[test]
    fn command_line_refuses_control_characters() {
        let err = command_line(&["define", "--file=a\nb"]).unwrap_err();
        assert!(err.to_string().contains("control character"), "{err}");
        assert!(command_line(&["echo", "tab\there"]).is_err());
        assert!(command_line(&[]).is_err());
        assert_eq!(
            command_line(&["start", "--domain=a b"]).unwrap(),
            "start '--domain=a b'"
        );
    }

    #[test]
    fn split_output_takes_error_lines_out() {
        let (out, errors) = split_output(
            "line 1\nerror: Failed to define domain\nerror: operation failed: exists\nline 2\n",
        );
        assert_eq!(out, "line 1\nline 2\n");
        assert_eq!(
            errors,
            ["Failed to define domain", "operation failed: exists"]
        );
    }

    #[test]
    fn reply_not_found_needs_the_lookup_line() {
        let reply = |errors: &[&str]| Reply {
            command: "x".into(),
            stdout: String::new(),
            errors: errors.iter().map(|s| (*s).to_owned()).collect(),
        };
        assert!(reply(&["failed to get domain 'a'"]).not_found("domain"));
        assert!(
            reply(&[
                "failed to get domain 'a'",
                "Domain not found: no domain with matching name 'a'"
            ])
            .not_found("domain")
        );
        assert!(
            !reply(&[
                "failed to get domain 'a'",
                "internal error: client socket is closed"
            ])
            .not_found("domain")
        );
        assert!(!reply(&["failed to get pool 'p'"]).not_found("vol"));
        assert!(!reply(&[]).not_found("domain"));
    }
}
