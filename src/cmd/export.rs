//! `lbscope export`: a recording through the analyzer into the Perfetto and JSON-lines
//! sinks.

use super::{damage_outcome, settings, CmdError};
use crate::cli::ExportArgs;
use crate::output::perfetto::{self, PerfettoWriter};
use crate::pipeline::sinks::{JsonlSink, PerfettoSink, Warnings};
use crate::pipeline::{Driver, Sink, Source};
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::atomic::AtomicBool;

fn create(path: &Path) -> Result<Box<dyn Write>, CmdError> {
    if path.as_os_str() == "-" {
        return Ok(Box::new(BufWriter::new(std::io::stdout().lock())));
    }
    settings::check_output(path)?;
    let f = std::fs::File::create(path)
        .map_err(|e| CmdError::Usage(format!("{}: cannot create: {e}", path.display())))?;
    Ok(Box::new(BufWriter::new(f)))
}

/// Counts the events exported.
#[derive(Default)]
struct Count(u64);

impl Sink for Count {
    fn events(&mut self, batch: &[crate::event::Event]) -> std::io::Result<()> {
        self.0 += batch.len() as u64;
        Ok(())
    }
}

/// Runs `lbscope export`.
pub fn run(args: &ExportArgs) -> Result<(), CmdError> {
    let src = Source::file(&args.file)?;
    let topo = src.topology().clone();
    let mut pf = match &args.perfetto {
        Some(p) => Some(PerfettoSink::new(PerfettoWriter::new(
            create(p)?,
            &topo,
            src.header.clock_base_ns,
        )?)),
        None => None,
    };
    let mut jsonl = match &args.jsonl {
        Some(p) => Some(JsonlSink::new(create(p)?)),
        None => None,
    };
    let mut n = Count::default();
    let mut warnings = Warnings;
    let mut sinks: Vec<&mut dyn Sink> = vec![&mut n, &mut warnings];
    if let Some(s) = &mut pf {
        sinks.push(s);
    }
    if let Some(s) = &mut jsonl {
        sinks.push(s);
    }
    // An export reads the whole recording: no stop flag.
    Driver::new(perfetto::analyzer(&topo)).run(&src, &mut sinks, &AtomicBool::new(false))?;
    eprintln!(
        "lbscope: exported {} events from {}",
        n.0,
        args.file.display()
    );
    damage_outcome(&args.file, &src.finish().damage)
}
