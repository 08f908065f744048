//! Generation: batching must not change any row's tokens; sampling is reproducible; EOS and
//! the callback stop rows.

mod common;

use common::{default_path, fixture_dir, reference, tiny_model};
use gpt2::generate::generate_fixed;
use gpt2::{generate, FinishReason, Flow, Request, Sampling};

#[test]
fn a_batch_generates_what_each_prompt_generates_alone() {
    let model = tiny_model(default_path());
    let ids = reference().ids;
    let requests = [
        Request::greedy(&ids, 6),
        Request::greedy(&ids[2..5], 9),
        Request::greedy(&ids[7..8], 4),
    ];
    let batched = generate(&model, &requests, &mut |_| Flow::Continue).unwrap();
    for (r, req) in requests.iter().enumerate() {
        let alone = generate(&model, std::slice::from_ref(req), &mut |_| Flow::Continue).unwrap();
        assert_eq!(batched[r], alone[0], "row {r}");
        assert_eq!(batched[r].tokens.len(), req.max_tokens);
        assert_eq!(batched[r].finish, FinishReason::Length);
    }
}

#[test]
fn the_callback_sees_every_token_in_order_and_can_stop_a_row() {
    let model = tiny_model(default_path());
    let ids = reference().ids;
    let mut seen: Vec<(usize, usize, u32)> = Vec::new();
    let out = generate(
        &model,
        &[Request::greedy(&ids, 5), Request::greedy(&ids, 5)],
        &mut |e| {
            seen.push((e.row, e.index, e.token));
            if e.row == 1 && e.index == 1 {
                Flow::Stop
            } else {
                Flow::Continue
            }
        },
    )
    .unwrap();
    assert_eq!(out[0].tokens.len(), 5);
    assert_eq!(out[1].tokens.len(), 2);
    assert_eq!(out[1].finish, FinishReason::Stopped);
    let row0: Vec<u32> = seen
        .iter()
        .filter(|(r, _, _)| *r == 0)
        .map(|(_, _, t)| *t)
        .collect();
    assert_eq!(row0, out[0].tokens);
    let indices: Vec<usize> = seen
        .iter()
        .filter(|(r, _, _)| *r == 0)
        .map(|(_, i, _)| *i)
        .collect();
    assert_eq!(indices, vec![0, 1, 2, 3, 4]);
}

#[test]
fn seeded_sampling_is_reproducible() {
    let model = tiny_model(default_path());
    let ids = reference().ids;
    let sampled = |seed| {
        let sampling = Sampling {
            temperature: 1.5,
            top_k: Some(50),
            top_p: Some(0.95),
            seed,
        };
        let req = Request {
            prompt: ids.clone(),
            max_tokens: 12,
            sampling,
            stop_at_eos: false,
        };
        generate(&model, &[req], &mut |_| Flow::Continue)
            .unwrap()
            .remove(0)
            .tokens
    };
    assert_eq!(sampled(7), sampled(7));
    assert_ne!(
        sampled(7),
        sampled(8),
        "different seeds should give different samples at temperature 1.5"
    );
}

#[test]
fn generation_stops_at_the_end_of_text_token() {
    let ids = reference().ids;
    let first = generate(
        &tiny_model(default_path()),
        &[Request::greedy(&ids, 3)],
        &mut |_| Flow::Continue,
    )
    .unwrap()[0]
        .tokens[0];
    // The same weights, with the first greedy token declared end-of-text.
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        fixture_dir().join("model.safetensors"),
        dir.path().join("model.safetensors"),
    )
    .unwrap();
    let mut cfg: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture_dir().join("config.json")).unwrap())
            .unwrap();
    cfg["eos_token_id"] = first.into();
    std::fs::write(dir.path().join("config.json"), cfg.to_string()).unwrap();
    let ckpt = gpt2::weights::Checkpoint::folder(dir.path().to_path_buf(), false);
    let model = gpt2::weights::load(
        &ckpt,
        &candle_core::Device::Cpu,
        candle_core::DType::F32,
        default_path(),
    )
    .unwrap();
    let mut req = Request::greedy(&ids, 3);
    req.stop_at_eos = true;
    let out = generate(&model, &[req], &mut |_| Flow::Continue).unwrap();
    assert_eq!(out[0].tokens, vec![first]);
    assert_eq!(out[0].finish, FinishReason::Eos);
}

#[test]
fn requests_that_cannot_fit_are_refused() {
    let model = tiny_model(default_path());
    let err = generate(&model, &[Request::greedy(&[1; 60], 10)], &mut |_| {
        Flow::Continue
    })
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("longer than the model's context of 64"),
        "{err}"
    );
    let err = generate(&model, &[Request::greedy(&[], 10)], &mut |_| Flow::Continue)
        .unwrap_err()
        .to_string();
    assert!(err.contains("empty prompt"), "{err}");
    let bad = Request {
        prompt: vec![1],
        max_tokens: 2,
        sampling: Sampling {
            temperature: -1.0,
            ..Sampling::greedy()
        },
        stop_at_eos: false,
    };
    assert!(generate(&model, &[bad], &mut |_| Flow::Continue)
        .unwrap_err()
        .to_string()
        .contains("temperature"));
}

#[test]
fn fixed_length_generation_reports_every_token_of_every_row() {
    let model = tiny_model(default_path());
    let ids = reference().ids;
    let prompts = [ids.clone(), ids[2..5].to_vec(), ids[7..8].to_vec()];
    let mut rows = Vec::new();
    generate_fixed(&model, &prompts, 4, &mut |row| rows.push(row)).unwrap();
    for row in 0..prompts.len() {
        assert_eq!(rows.iter().filter(|&&r| r == row).count(), 4, "row {row}");
    }
    assert_eq!(rows.len(), 12);
}
