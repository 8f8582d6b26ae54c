// Streams one chat completion with the official openai npm package and prints the text the
// stream carried, for e2e/sdk_test.go to compare with the Go SDK's. Usage:
//   BASE_URL=http://127.0.0.1:PORT/v1 MODEL=stories260k [REQUEST_ID=id] node stream.mjs
import OpenAI from "openai";

const client = new OpenAI({
  baseURL: process.env.BASE_URL,
  apiKey: "unused",
  maxRetries: 0,
  defaultHeaders: process.env.REQUEST_ID ? { "X-Request-Id": process.env.REQUEST_ID } : {},
});
const stream = await client.chat.completions.create({
  model: process.env.MODEL,
  messages: [{ role: "user", content: "Once upon a time" }],
  stream: true,
  max_tokens: 64,
  temperature: 0,
  seed: 1,
});
let text = "";
for await (const chunk of stream) {
  text += chunk.choices[0]?.delta?.content ?? "";
}
process.stdout.write(text);
