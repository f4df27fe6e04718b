//! The `lbscope` binary: parse the command line, dispatch, map errors to exit codes
//! (0 success, 1 failure, 2 bad usage, 3 results over a damaged recording; a closed output
//! pipe exits 0).

use lbscope::cli::{Cli, Command};
use lbscope::cmd::{self, CmdError};

fn main() {
    #[cfg(feature = "bpf")]
    if std::env::var_os("LBSCOPE_DEBUG").is_none() {
        // libbpf's own log goes to stderr; errors reach the user through our messages.
        libbpf_rs::set_print(None);
    }
    let cli = {
        use clap::{CommandFactory, FromArgMatches};
        // `--version` adds what this machine's kernel offers; `-V` stays the bare version.
        let long: &'static str = Box::leak(lbscope::cmd::version::long_version().into_boxed_str());
        let matches = Cli::command().long_version(long).get_matches();
        Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
    };
    let result = match &cli.command {
        Command::Report(a) => cmd::report::run(a).map(|()| true),
        Command::Doctor(a) => cmd::doctor::run(a),
        Command::Record(a) => cmd::record::run(a).map(|()| true),
        Command::Diff(a) => cmd::diff::run(a).map(|()| true),
        Command::Export(a) => cmd::export::run(a).map(|()| true),
        Command::Top(a) => cmd::top::run(a).map(|()| true),
        Command::Replay(a) => cmd::replay::run(a).map(|()| true),
        Command::Serve(a) => cmd::serve::run(a).map(|()| true),
        Command::Man => {
            use std::io::Write;
            std::io::stdout()
                .write_all(&lbscope::cli::man_page())
                .map(|()| true)
                .map_err(CmdError::Io)
        }
        Command::Completions { shell } => {
            use std::io::Write;
            let script = lbscope::cli::completion_script(*shell);
            std::io::stdout()
                .write_all(&script)
                .map(|()| true)
                .map_err(CmdError::Io)
        }
    };
    let code = match result {
        Ok(true) => 0,
        Ok(false) => 1,
        Err(CmdError::Io(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => 0,
        Err(e) => {
            eprintln!("lbscope: {e}");
            match e {
                CmdError::Usage(_) => 2,
                CmdError::Incomplete(_) => 3,
                _ => 1,
            }
        }
    };
    std::process::exit(code);
}
