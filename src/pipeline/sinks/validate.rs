//! Validation as a sink: every batch goes to the [`Validator`] (the model judged against the
//! kernel's own balancer decisions) before the analyzer sees it.

use crate::event::Event;
use crate::model::ModelConfig;
use crate::pipeline::Sink;
use crate::topology::Topology;
use crate::validate::Validator;
use std::io;

/// Feeds the validator.
pub struct Validation(pub Validator);

impl Validation {
    /// A validator of `topo` under the model's `config`.
    pub fn new(topo: &Topology, config: ModelConfig) -> Validation {
        Validation(Validator::new(topo, config))
    }

    /// The figures.
    pub fn finish(self) -> crate::validate::Validation {
        self.0.finish()
    }
}

impl Sink for Validation {
    fn events(&mut self, batch: &[Event]) -> io::Result<()> {
        self.0.push(batch);
        Ok(())
    }
}
