//! `serve --model FILE.gguf` end to end, the real binary on loopback: the Qwen3 fixture (a
//! byte-level tokenizer and a ChatML template in its metadata) and the Llama fixture (a
//! SentencePiece tokenizer, no template), both written by scripts/make-gguf-fixtures.py, answer
//! whole and streamed completions alike and chat through their own template; a Hub repository
//! of several GGUF files, on a stand-in Hub (`HF_ENDPOINT`), gives its Q8_0 file, the one
//! `--file` names, or an error that lists them.

use std::io::{BufRead, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::{json, Value};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../llama/tests/fixtures/gguf")
        .join(name)
}

/// A running `serve`, stopped when dropped.
struct Server {
    child: Child,
    addr: String,
    /// What it printed before listening.
    said: Vec<String>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(args: &[&str], env: &[(&str, &Path)]) -> Result<Server, String> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_serve"))
        .args(["--port", "0", "--device", "cpu"])
        .args(args)
        .envs(env.iter().map(|(k, v)| (*k, *v)))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let mut said = Vec::new();
    while let Some(Ok(line)) = lines.next() {
        if let Some(rest) = line.strip_prefix("serve: listening on http://") {
            let addr = rest.split_whitespace().next().unwrap().to_string();
            said.push(line);
            // Keep reading: a closed pipe would end the server at its next line.
            std::thread::spawn(move || lines.for_each(drop));
            return Ok(Server { child, addr, said });
        }
        said.push(line);
    }
    let _ = child.wait();
    Err(said.join("\n"))
}

/// One HTTP/1.1 request; the status and the body.
fn request(addr: &str, method: &str, path: &str, body: &str) -> (u16, String) {
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(stream, "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    let body = match head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        true => unchunk(body),
        false => body.to_string(),
    };
    (status, body)
}

fn unchunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap();
        if n == 0 {
            break;
        }
        out.push_str(&rest[..n]);
        body = &rest[n + 2..];
    }
    out
}

fn post(addr: &str, path: &str, body: Value) -> Value {
    let (status, text) = request(addr, "POST", path, &body.to_string());
    assert_eq!(status, 200, "{text}");
    serde_json::from_str(&text).unwrap()
}

/// The `data:` events of a streamed answer, up to `[DONE]`.
fn stream(addr: &str, path: &str, body: Value) -> Vec<Value> {
    let (status, text) = request(addr, "POST", path, &body.to_string());
    assert_eq!(status, 200, "{text}");
    let data: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .collect();
    assert_eq!(data.last(), Some(&"[DONE]"), "{text}");
    data[..data.len() - 1]
        .iter()
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

/// Whole and streamed completions of the same greedy request give the same text.
fn completions_agree(server: &Server, model: &str) {
    let body =
        json!({"model": model, "prompt": "Profiling says why", "max_tokens": 6, "temperature": 0});
    let whole = post(&server.addr, "/v1/completions", body.clone());
    let text = whole["choices"][0]["text"].as_str().unwrap().to_string();
    assert_eq!(whole["usage"]["completion_tokens"], 6, "{whole}");
    let mut streamed_body = body;
    streamed_body["stream"] = json!(true);
    let streamed: String = stream(&server.addr, "/v1/completions", streamed_body)
        .iter()
        .filter_map(|e| e["choices"][0]["text"].as_str().map(str::to_string))
        .collect();
    assert_eq!(streamed, text);
}

#[test]
fn a_qwen3_gguf_serves_completions_and_chats_through_its_own_template() {
    let path = fixture("tiny-qwen3-mixed.gguf");
    let model = path.to_str().unwrap();
    let server = serve(&["--model", model], &[]).unwrap();
    let said = server.said.join("\n");
    assert!(
        said.contains("chat template of") && said.contains("tiny-qwen3-mixed.gguf"),
        "{said}"
    );
    completions_agree(&server, model);

    // The prompt the template makes, counted by the file's own tokenizer.
    let file = engine::gguf::GgufFile::open(&path).unwrap();
    let tk = engine::gguf::tokenizer::tokenizer(&file).unwrap().unwrap();
    let rendered = "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n";
    let messages =
        json!([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]);
    let chat = post(
        &server.addr,
        "/v1/chat/completions",
        json!({"model": model, "messages": messages, "max_tokens": 4, "temperature": 0}),
    );
    assert_eq!(
        chat["usage"]["prompt_tokens"],
        tk.encode(rendered).unwrap().len(),
        "{chat}"
    );
    let reply = chat["choices"][0]["message"]["content"]
        .as_str()
        .unwrap()
        .to_string();
    let streamed: String = stream(
        &server.addr,
        "/v1/chat/completions",
        json!({"model": model, "messages": messages, "max_tokens": 4, "temperature": 0, "stream": true}),
    )
    .iter()
    .filter_map(|e| e["choices"][0]["delta"]["content"].as_str().map(str::to_string))
    .collect();
    assert_eq!(streamed, reply);
}

#[test]
fn a_llama_gguf_without_a_template_serves_with_the_transcript() {
    let path = fixture("tiny-llama-q8_0.gguf");
    let model = path.to_str().unwrap();
    let server = serve(&["--model", model], &[]).unwrap();
    let said = server.said.join("\n");
    assert!(said.contains("no chat template"), "{said}");
    completions_agree(&server, model);
    let chat = post(
        &server.addr,
        "/v1/chat/completions",
        json!({"model": model, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 3}),
    );
    assert_eq!(chat["usage"]["completion_tokens"], 3, "{chat}");

    // The file says tokenizer.ggml.add_bos_token = true (Llama 2's SentencePiece): a text
    // prompt starts with its BOS, as llama.cpp's server and vLLM tokenize it, once.
    let file = engine::gguf::GgufFile::open(&path).unwrap();
    let tk = engine::gguf::tokenizer::tokenizer(&file).unwrap().unwrap();
    let prompt = "Profiling says why";
    let with_bos = tk.encode_with_special_tokens(prompt).unwrap();
    assert_eq!(with_bos.len(), tk.encode(prompt).unwrap().len() + 1);
    assert_eq!(Some(with_bos[0]), tk.token_id("<s>"));
    let whole = post(
        &server.addr,
        "/v1/completions",
        json!({"model": model, "prompt": prompt, "max_tokens": 1}),
    );
    assert_eq!(whole["usage"]["prompt_tokens"], with_bos.len(), "{whole}");
    let transcript = "User: Hi\nAssistant:";
    assert_eq!(
        chat["usage"]["prompt_tokens"],
        tk.encode_with_special_tokens(transcript).unwrap().len(),
        "{chat}"
    );
}

/// A gpt2 GGUF (llama.cpp's converter and llama-quantize, scripts/make-gpt2-gguf-fixtures.py)
/// runs on GPT-2 with its quantized matrices and the tokenizer of its metadata, no template.
#[test]
fn a_gpt2_gguf_serves_on_gpt2_with_its_own_tokenizer() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../gpt2/tests/fixtures/gguf/tiny-gpt2-q4_0.gguf");
    let model = path.to_str().unwrap();
    let server = serve(&["--model", model], &[]).unwrap();
    let said = server.said.join("\n");
    assert!(said.contains("no chat template"), "{said}");
    completions_agree(&server, model);
    let file = engine::gguf::GgufFile::open(&path).unwrap();
    let tk = engine::gguf::tokenizer::tokenizer(&file).unwrap().unwrap();
    let prompt = "Profiling says why";
    let whole = post(
        &server.addr,
        "/v1/completions",
        json!({"model": model, "prompt": prompt, "max_tokens": 2, "temperature": 0}),
    );
    assert_eq!(
        whole["usage"]["prompt_tokens"],
        tk.encode(prompt).unwrap().len(),
        "{whole}"
    );
}

#[test]
fn a_gguf_without_a_tokenizer_or_a_missing_file_is_refused_by_name() {
    // llama.cpp's converter always writes a tokenizer: this copy of the Q1_0 fixture has its
    // tokenizer.ggml.model key renamed (the same length), so it carries none.
    let dir = tempfile::tempdir().unwrap();
    let untokenized = dir.path().join("untokenized-q1_0.gguf");
    let mut bytes = std::fs::read(fixture("tiny-qwen3-q1_0.gguf")).unwrap();
    let key = b"tokenizer.ggml.model";
    let at = bytes.windows(key.len()).position(|w| w == key).unwrap();
    bytes[at + key.len() - 1] = b'x';
    std::fs::write(&untokenized, bytes).unwrap();
    let e = serve(&["--model", untokenized.to_str().unwrap()], &[])
        .err()
        .unwrap();
    assert!(
        e.contains("untokenized-q1_0.gguf") && e.contains("no tokenizer"),
        "{e}"
    );
    let e = serve(&["--model", "no-such-model-Q8_0.gguf"], &[])
        .err()
        .unwrap();
    assert!(
        e.contains("--model no-such-model-Q8_0.gguf: no such file"),
        "{e}"
    );
}

/// A repository's files: name and bytes.
type Files = Vec<(&'static str, Vec<u8>)>;

/// A stand-in for the Hub on loopback: `repos` (id → files), answering hf-hub's two requests:
/// the repository's file list (`/api/models/{id}/revision/{rev}`) and a file's bytes
/// (`/{id}/resolve/{rev}/{file}`, with a `Range`, the size in `Content-Range`, the commit in
/// `x-repo-commit`). Runs until the process ends.
fn stand_in_hub(repos: Vec<(&'static str, Files)>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = std::io::BufReader::new(stream.try_clone().unwrap());
            let mut head = Vec::new();
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                head.push(line.trim_end().to_string());
            }
            let path = head
                .first()
                .and_then(|l| l.split_whitespace().nth(1))
                .unwrap_or("");
            let range = head.iter().find_map(|l| {
                l.to_ascii_lowercase()
                    .strip_prefix("range: bytes=")
                    .map(str::to_string)
            });
            let find = |repo: &str| repos.iter().find(|(id, _)| *id == repo).map(|(_, f)| f);
            let mut answer = |status: &str, headers: String, body: &[u8]| {
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n{headers}\r\n",
                    body.len()
                );
                let _ = stream.write_all(body);
            };
            if let Some(rest) = path.strip_prefix("/api/models/") {
                let repo = rest.split("/revision/").next().unwrap();
                match find(repo) {
                    Some(files) => {
                        let siblings: Vec<Value> =
                            files.iter().map(|(n, _)| json!({"rfilename": n})).collect();
                        let body = json!({"siblings": siblings, "sha": "0123456789abcdef0123456789abcdef01234567"});
                        answer(
                            "200 OK",
                            "Content-Type: application/json\r\n".into(),
                            body.to_string().as_bytes(),
                        );
                    }
                    None => answer("404 Not Found", String::new(), b""),
                }
                continue;
            }
            let file = path.split_once("/resolve/").and_then(|(repo, rest)| {
                let name = rest.split_once('/')?.1;
                find(repo.trim_start_matches('/'))?
                    .iter()
                    .find(|(n, _)| *n == name)
            });
            let Some((name, bytes)) = file else {
                answer("404 Not Found", String::new(), b"");
                continue;
            };
            let (start, end) = match range.as_deref().and_then(|r| r.split_once('-')) {
                Some((a, b)) => (
                    a.parse().unwrap_or(0),
                    b.parse::<usize>()
                        .map(|b| b + 1)
                        .unwrap_or(bytes.len())
                        .min(bytes.len()),
                ),
                None => (0, bytes.len()),
            };
            let headers = format!(
                "Content-Range: bytes {start}-{}/{}\r\nETag: \"{:x}-{}\"\r\nx-repo-commit: 0123456789abcdef0123456789abcdef01234567\r\n",
                end.max(1) - 1,
                bytes.len(),
                bytes.len(),
                name.len()
            );
            answer("206 Partial Content", headers, &bytes[start..end]);
        }
    });
    url
}

#[test]
fn a_hub_repository_of_gguf_files_gives_its_q8_0_the_one_named_or_a_list() {
    let read = |n: &str| std::fs::read(fixture(n)).unwrap();
    let endpoint = stand_in_hub(vec![
        (
            "course/tiny-llama-GGUF",
            vec![
                ("README.md", b"tiny".to_vec()),
                ("tiny-llama-q4_0.gguf", read("tiny-llama-q4_0.gguf")),
                ("tiny-llama-q8_0.gguf", read("tiny-llama-q8_0.gguf")),
                ("tiny-llama-mixed.gguf", read("tiny-llama-mixed.gguf")),
            ],
        ),
        (
            "course/no-q8",
            vec![
                ("a-q4_0.gguf", read("tiny-llama-q4_0.gguf")),
                ("a-mixed.gguf", read("tiny-llama-mixed.gguf")),
            ],
        ),
    ]);
    let hf = tempfile::tempdir().unwrap();
    let endpoint_path = PathBuf::from(&endpoint);
    let env = [
        ("HF_HOME", hf.path()),
        ("HF_ENDPOINT", endpoint_path.as_path()),
    ];
    let snapshot = |repo: &str, file: &str| {
        hf.path()
            .join(format!(
                "hub/models--course--{repo}/snapshots/0123456789abcdef0123456789abcdef01234567"
            ))
            .join(file)
    };

    let server = serve(&["--model", "course/tiny-llama-GGUF"], &env).unwrap();
    completions_agree(&server, "course/tiny-llama-GGUF");
    drop(server);
    assert!(snapshot("tiny-llama-GGUF", "tiny-llama-q8_0.gguf").is_file());
    assert!(!snapshot("tiny-llama-GGUF", "tiny-llama-q4_0.gguf").exists());

    let server = serve(
        &[
            "--model",
            "course/tiny-llama-GGUF",
            "--file",
            "tiny-llama-q4_0.gguf",
        ],
        &env,
    )
    .unwrap();
    drop(server);
    assert!(snapshot("tiny-llama-GGUF", "tiny-llama-q4_0.gguf").is_file());

    let e = serve(&["--model", "course/no-q8"], &env).err().unwrap();
    assert!(
        e.contains("course/no-q8 has 2 GGUF files and none of them is Q8_0")
            && e.contains("--file NAME: a-q4_0.gguf, a-mixed.gguf"),
        "{e}"
    );
    let e = serve(&["--model", "course/no-q8", "--file", "b.gguf"], &env)
        .err()
        .unwrap();
    assert!(e.contains("b.gguf"), "{e}");
}
