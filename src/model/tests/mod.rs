//! Model tests: the kernel's arithmetic on per-CPU states built in code (`stats`), and the
//! findings raised by event sequences fed through the analyzer (`findings`), and by the
//! topology lab's scenario recordings (`lab`).

mod findings;
mod lab;
mod rules;
mod stats;
