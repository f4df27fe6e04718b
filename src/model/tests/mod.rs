//! Model tests: the kernel's arithmetic on per-CPU states built in code (`stats`), and the
//! findings raised by event sequences fed through the analyzer (`findings`), and by the
//! topology lab's scenario recordings (`lab`); the rules that differ between releases or hang
//! on the kernel's data structures, worked from each release's source (`rules`).

mod findings;
mod lab;
mod margin;
mod rules;
mod stats;
