// Opens a page of the built book in headless Chromium, takes its quiz, answering the first
// question right and the second wrong (the rest right), and asserts what mdbook-quiz shows:
// the score, which answer is marked correct and which incorrect, and, after "see the correct
// answers", the right answer and the question's context. Saves a screenshot of the review.
//
// Run by scripts/test-book.sh, which builds the book and serves it on loopback:
//   node quiz-in-browser.mjs --base-url URL --chromium PATH --quiz FILE.toml --page PAGE.html
//                            --screenshot OUT.png [--counts FILE]
// Expected answers come from the quiz's TOML file, the same file the book was built from.
// Prints one line per assertion; writes "PASSED FAILED" to --counts for the caller's total.

import { readFile, stat, writeFile, mkdir } from "node:fs/promises";
import { dirname } from "node:path";
import { parseArgs } from "node:util";
import puppeteer from "puppeteer-core";
import { parse as parseToml } from "smol-toml";

const { values: args } = parseArgs({
  options: {
    "base-url": { type: "string" },
    chromium: { type: "string", default: "/usr/bin/chromium" },
    quiz: { type: "string" },
    page: { type: "string" },
    screenshot: { type: "string", default: "target/book-quiz.png" },
    counts: { type: "string" },
  },
});
for (const required of ["base-url", "quiz", "page"]) {
  if (!args[required]) {
    console.error(`quiz-in-browser: --${required} is required (see the comment at the top of this file)`);
    process.exit(2);
  }
}

let passed = 0;
let failed = 0;
function check(condition, what, detail = "") {
  if (condition) {
    passed += 1;
    console.log(`ok   browser: ${what}`);
  } else {
    failed += 1;
    console.log(`FAIL browser: ${what}${detail ? ` (${detail})` : ""}`);
  }
  return condition;
}

// Text as the browser shows it: whitespace runs collapsed, as in rendered Markdown.
const squash = (s) => s.replace(/\s+/g, " ").trim();
// The first sentence of a context, without Markdown emphasis, to find it on the page.
const firstSentence = (context) => squash(context.replace(/[*`_]/g, "")).split(/(?<=[.:])\s/)[0];

const quiz = parseToml(await readFile(args.quiz, "utf8"));
const questions = quiz.questions;
const [right, wrong] = questions;
for (const q of [right, wrong]) {
  if (q?.type !== "MultipleChoice" || typeof q.answer.answer !== "string") {
    console.error(`quiz-in-browser: the first two questions of ${args.quiz} must be single-answer MultipleChoice`);
    process.exit(2);
  }
}
const wrongChoice = wrong.prompt.distractors[0];
// The answers this test gives: question 2 wrong, every other question right.
const given = questions.map((q, i) => (i === 1 ? wrongChoice : q.answer.answer));

const browser = await puppeteer.launch({
  executablePath: args.chromium,
  headless: true,
  // --no-sandbox: CI containers run as root, where Chromium's sandbox cannot start.
  args: ["--no-sandbox", "--disable-gpu", "--window-size=1280,1600"],
});
const pageErrors = [];
try {
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 1600 });
  page.on("pageerror", (err) => pageErrors.push(String(err)));
  page.on("console", (msg) => {
    if (msg.type() === "error") pageErrors.push(msg.text());
  });

  const url = `${args["base-url"]}/${args.page}`;
  const response = await page.goto(url, { waitUntil: "networkidle0", timeout: 30_000 });
  check(response?.ok(), `${args.page} loads`, `HTTP ${response?.status()}`);

  const quizBox = await page.waitForSelector(".mdbook-quiz", { timeout: 15_000 }).catch(() => null);
  if (!check(quizBox !== null, "the quiz placeholder is rendered by mdbook-quiz's script")) {
    throw new Error("no quiz on the page");
  }
  const counterText = () => page.$eval(".mdbook-quiz .counter", (e) => e.textContent.trim());
  check(
    (await counterText()) === `${questions.length} questions`,
    `the quiz announces ${questions.length} questions`,
    await counterText(),
  );

  await page.click(".mdbook-quiz button.start");
  await page.waitForSelector(".mdbook-quiz form.response");
  const shownChoices = await page.$$eval(".mdbook-quiz input[type=radio]", (els) => els.map((e) => e.value));
  const expectedChoices = [right.answer.answer, ...right.prompt.distractors].sort();
  check(
    JSON.stringify(shownChoices) === JSON.stringify(expectedChoices),
    `question 1 offers exactly ${expectedChoices.join(" / ")}`,
    `shown: ${shownChoices.join(" / ")}`,
  );

  for (const [i, choice] of given.entries()) {
    await page.waitForFunction(
      (n) => document.querySelector(".mdbook-quiz .counter")?.textContent.includes(`Question ${n} /`),
      { timeout: 5_000 },
      i + 1,
    );
    const radio = `.mdbook-quiz input[type=radio][value=${JSON.stringify(choice)}]`;
    await page.click(radio);
    await page.click(".mdbook-quiz form.response input[type=submit]");
  }

  await page.waitForSelector(".mdbook-quiz .answer-wrapper", { timeout: 5_000 });
  const summary = squash(await page.$eval(".mdbook-quiz section > p", (e) => e.textContent));
  const expectedScore = `${questions.length - 1}/${questions.length}`;
  check(
    summary.includes(`You answered ${expectedScore} questions correctly`),
    `the review reports ${expectedScore} correct`,
    summary,
  );

  const reviewed = () =>
    page.$$eval(".mdbook-quiz .answer-wrapper", (wrappers) =>
      wrappers.map((w) => ({
        text: w.textContent.replace(/\s+/g, " "),
        given: w.querySelector(".answer-row > div:first-child .md-flex")?.textContent.trim(),
        givenClass: w.querySelector(".answer-row > div:first-child .md-flex")?.className ?? "",
        correctAnswer: w.querySelector(".answer-row > div:nth-child(2) .md-flex")?.textContent.trim(),
        context: w.querySelector(".context")?.textContent.replace(/\s+/g, " ") ?? "",
      })),
    );
  let rows = await reviewed();
  check(rows.length === questions.length, `the review lists all ${questions.length} questions`, `${rows.length}`);
  check(
    rows[0]?.given === right.answer.answer && /\bcorrect\b/.test(rows[0]?.givenClass) && !/incorrect/.test(rows[0]?.givenClass),
    `question 1, answered "${right.answer.answer}", is marked correct`,
    JSON.stringify(rows[0]),
  );
  check(
    rows[1]?.given === wrongChoice && /\bincorrect\b/.test(rows[1]?.givenClass),
    `question 2, answered "${wrongChoice}", is marked incorrect`,
    JSON.stringify(rows[1]),
  );
  check(
    rows[1]?.correctAnswer === undefined,
    "the correct answer to question 2 stays hidden until the reader asks for it",
    rows[1]?.correctAnswer,
  );

  const [reveal] = await page.$$("xpath/.//button[contains(., 'see the correct answers')]");
  if (check(reveal !== undefined, 'the review offers "see the correct answers"')) {
    await reveal.click();
    await page.waitForSelector(".mdbook-quiz .context");
    rows = await reviewed();
    check(
      rows[1]?.correctAnswer === wrong.answer.answer,
      `question 2 then shows the correct answer "${wrong.answer.answer}"`,
      rows[1]?.correctAnswer,
    );
    const wanted = firstSentence(wrong.context);
    check(rows[1]?.context.includes(wanted), "question 2 then shows its context explanation", `looked for: ${wanted}`);
    check(
      rows[0]?.context.includes(firstSentence(right.context)),
      "question 1 shows its context explanation too",
    );
  }

  await mkdir(dirname(args.screenshot), { recursive: true });
  // mdBook's sticky menu bar would otherwise cover the top of the element screenshot.
  await page.evaluate(() => {
    const bar = document.querySelector("#mdbook-menu-bar, #menu-bar");
    if (bar) bar.style.position = "static";
  });
  const review = await page.$(".mdbook-quiz");
  await review.scrollIntoView();
  await review.screenshot({ path: args.screenshot });
  const shot = await stat(args.screenshot).catch(() => null);
  check(shot !== null && shot.size > 10_000, `screenshot saved to ${args.screenshot}`, `${shot?.size ?? 0} bytes`);

  check(pageErrors.length === 0, "no JavaScript errors on the page", pageErrors.join(" | "));
} catch (err) {
  check(false, "the browser session completed", String(err?.message ?? err));
} finally {
  await browser.close();
  if (args.counts) await writeFile(args.counts, `${passed} ${failed}\n`);
  console.log(`browser: ${passed} passed, ${failed} failed`);
}
process.exit(failed > 0 ? 1 : 0);
