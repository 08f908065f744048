//! A `tracing_subscriber` layer that turns entered spans into profiler scopes, so any code
//! that opens spans (candle-transformers' `with_tracing` wrappers: `linear`, `embedding`,
//! `rms-norm`, …) lands in the same table as hand-placed scopes.
//!
//! Spans are created when a model is built and entered on every forward: install the
//! subscriber *before* building the model, or its spans are disabled for good.

use std::cell::RefCell;

use tracing::span::{Attributes, Id};
use tracing::{Metadata, Subscriber};
use tracing_subscriber::layer::Context;
use tracing_subscriber::Layer;

use crate::scope::{scope_of_kind, Kind, Scope};

thread_local! {
    /// Scopes opened for entered spans on this thread, innermost last.
    static ENTERED: RefCell<Vec<(Id, Scope)>> = const { RefCell::new(Vec::new()) };
}

/// Span names treated as modules by default; every other span is an op.
pub const DEFAULT_MODULE_SPANS: &[&str] = &[
    "block",
    "layer",
    "decoder-layer",
    "encoder-layer",
    "attn",
    "self-attn",
    "self_attn",
    "cross-attn",
    "attention",
    "mlp",
    "moe",
    "model",
    "decoder",
    "encoder",
];

/// Records entered spans as scopes while a [`crate::Profiler`] step is recording on the
/// entering thread.
pub struct ProfilerLayer {
    classify: Box<dyn Fn(&Metadata<'_>) -> Kind + Send + Sync>,
}

impl Default for ProfilerLayer {
    fn default() -> Self {
        Self::new()
    }
}

impl ProfilerLayer {
    /// Spans named in [`DEFAULT_MODULE_SPANS`] become modules, all others ops.
    pub fn new() -> Self {
        ProfilerLayer {
            classify: Box::new(|m| {
                if DEFAULT_MODULE_SPANS.contains(&m.name()) {
                    Kind::Module
                } else {
                    Kind::Op
                }
            }),
        }
    }

    /// Decide per span whether it is an op or a module.
    pub fn with_classifier(
        classify: impl Fn(&Metadata<'_>) -> Kind + Send + Sync + 'static,
    ) -> Self {
        ProfilerLayer {
            classify: Box::new(classify),
        }
    }
}

impl<S> Layer<S> for ProfilerLayer
where
    S: Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    fn on_new_span(&self, _attrs: &Attributes<'_>, _id: &Id, _ctx: Context<'_, S>) {}

    fn on_enter(&self, id: &Id, ctx: Context<'_, S>) {
        if !crate::scope::is_recording() {
            return;
        }
        let Some(span) = ctx.span(id) else { return };
        let metadata = span.metadata();
        let scope = scope_of_kind(metadata.name(), (self.classify)(metadata));
        ENTERED.with(|e| e.borrow_mut().push((id.clone(), scope)));
    }

    fn on_exit(&self, id: &Id, _ctx: Context<'_, S>) {
        ENTERED.with(|e| {
            let mut entered = e.borrow_mut();
            // Spans exit innermost first; a span entered before recording began has no
            // scope here and is skipped.
            if let Some(pos) = entered.iter().rposition(|(i, _)| i == id) {
                let closed: Vec<(Id, Scope)> = entered.drain(pos..).collect();
                drop(entered);
                // Close innermost first, outside the borrow.
                for (_, scope) in closed.into_iter().rev() {
                    drop(scope);
                }
            }
        });
    }
}
