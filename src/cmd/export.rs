//! `lbscope export`: a recording's events to Perfetto or JSON lines.

use super::report::damage_outcome;
use super::CmdError;
use crate::cli::ExportArgs;
use crate::output::jsonl::JsonlWriter;
use crate::output::perfetto::PerfettoWriter;
use crate::record::Reader;
use std::io::{BufWriter, Write};
use std::path::Path;

fn create(path: &Path) -> Result<Box<dyn Write>, CmdError> {
    if path.as_os_str() == "-" {
        return Ok(Box::new(BufWriter::new(std::io::stdout().lock())));
    }
    super::record::check_output(path)?;
    let f = std::fs::File::create(path)
        .map_err(|e| CmdError::Usage(format!("{}: cannot create: {e}", path.display())))?;
    Ok(Box::new(BufWriter::new(f)))
}

/// Runs `lbscope export`.
pub fn run(args: &ExportArgs) -> Result<(), CmdError> {
    let mut reader = Reader::open(&args.file)?;
    let header = reader.header().clone();
    let mut perfetto = match &args.perfetto {
        Some(p) => Some(PerfettoWriter::new(
            create(p)?,
            &header.topology,
            header.clock_base_ns,
        )?),
        None => None,
    };
    let mut jsonl = match &args.jsonl {
        Some(p) => Some(JsonlWriter::new(create(p)?)),
        None => None,
    };
    let mut n = 0u64;
    while let Some(events) = reader.next_chunk() {
        for ev in &events {
            if let Some(w) = &mut perfetto {
                w.write(ev)?;
            }
            if let Some(w) = &mut jsonl {
                w.write(ev)?;
            }
        }
        n += events.len() as u64;
    }
    if let Some(w) = perfetto {
        w.finish()?.flush()?;
    }
    if let Some(w) = jsonl {
        w.finish()?;
    }
    eprintln!("lbscope: exported {n} events from {}", args.file.display());
    damage_outcome(&args.file, reader.damage())
}
