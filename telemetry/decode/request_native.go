package decode

import (
	"github.com/valyala/fastjson"
)

// nativeRequest reads the fields of a request body that belong to api rather than to OpenAI's
// chat and completions APIs into req; nativePrompt adds the API's prompt texts. Both leave the
// OpenAI rules alone for an OpenAI API and an empty or unknown name. The fields and prompts:
//
//	anthropic.messages  max_tokens (already read); prompt: system (a string or text blocks), then
//	                    messages[].content (a string, or blocks: the text of text blocks and of
//	                    tool_result blocks)
//	openai.responses    max_output_tokens; prompt: instructions, then input (a string, or items
//	                    whose content is a string or parts with text, and tool outputs)
//	ollama.chat,        stream is true unless the body says false (Ollama streams by default);
//	ollama.generate     options.num_predict (a negative value means "no limit": -1); prompt:
//	                    system, then messages[].content, then prompt
//	tgi.generate        parameters.max_new_tokens; prompt: inputs. /generate_stream streams
//	                    whatever the body says, so Stream is only what the body says.
//	openai.embeddings   prompt: input (a string or strings; token ids carry no text), then
//	                    prompt (Ollama's /api/embeddings)
//	rerank              prompt: query, then documents (strings or objects with text), then
//	                    texts (TEI)
func nativeRequest(api string, v *fastjson.Value, req *Request) {
	switch api {
	case APIOpenAIResponses:
		req.MaxTokens = count(v.Get("max_output_tokens"))
	case APIOllamaChat, APIOllamaGenerate:
		if s := v.Get("stream"); s == nil || s.Type() == fastjson.TypeNull {
			req.Stream = true
		}
		req.MaxTokens = count(v.Get("options", "num_predict"))
	case APITGIGenerate:
		req.MaxTokens = count(v.Get("parameters", "max_new_tokens"))
	}
}

// nativePrompt adds the prompt texts of a request of api (see nativeRequest). The calls are
// direct, not through a function value, so that the builder stays on the caller's stack.
func nativePrompt(api string, v *fastjson.Value, pb *promptBuilder) {
	switch api {
	case APIAnthropicMessages:
		anthropicPrompt(v, pb)
	case APIOpenAIResponses:
		responsesPrompt(v, pb)
	case APIOllamaChat, APIOllamaGenerate:
		ollamaPrompt(v, pb)
	case APITGIGenerate:
		tgiPrompt(v, pb)
	case APIEmbeddings:
		embeddingsPrompt(v, pb)
	case APIRerank:
		rerankPrompt(v, pb)
	default:
		openAIPrompt(v, pb)
	}
}

func anthropicPrompt(v *fastjson.Value, pb *promptBuilder) {
	pb.blocks(v.Get("system"))
	for _, m := range v.GetArray("messages") {
		pb.blocks(m.Get("content"))
	}
}

func responsesPrompt(v *fastjson.Value, pb *promptBuilder) {
	pb.add(v.GetStringBytes("instructions"))
	in := v.Get("input")
	if in == nil {
		return
	}
	if in.Type() == fastjson.TypeString {
		pb.add(in.GetStringBytes())
		return
	}
	for _, it := range in.GetArray() {
		pb.blocks(it.Get("content"))
		pb.add(it.GetStringBytes("output")) // function_call_output
	}
}

func ollamaPrompt(v *fastjson.Value, pb *promptBuilder) {
	pb.add(v.GetStringBytes("system"))
	pb.messages(v.GetArray("messages"))
	pb.add(v.GetStringBytes("prompt"))
}

func tgiPrompt(v *fastjson.Value, pb *promptBuilder) {
	pb.add(v.GetStringBytes("inputs"))
}

func embeddingsPrompt(v *fastjson.Value, pb *promptBuilder) {
	pb.strings(v.Get("input"))
	pb.strings(v.Get("prompt"))
}

func rerankPrompt(v *fastjson.Value, pb *promptBuilder) {
	pb.add(v.GetStringBytes("query"))
	for _, key := range [...]string{"documents", "texts"} {
		for _, doc := range v.GetArray(key) {
			if doc.Type() == fastjson.TypeString {
				pb.add(doc.GetStringBytes())
			} else {
				pb.add(doc.GetStringBytes("text"))
			}
		}
	}
}

// messages adds the content of OpenAI-style messages: a string, or the text of each part.
func (b *promptBuilder) messages(ms []*fastjson.Value) {
	for _, m := range ms {
		c := m.Get("content")
		if c == nil {
			continue
		}
		switch c.Type() {
		case fastjson.TypeString:
			b.add(c.GetStringBytes())
		case fastjson.TypeArray:
			for _, part := range c.GetArray() {
				b.add(part.GetStringBytes("text"))
			}
		}
	}
}

// strings adds a string, or each string of an array (other elements carry no text).
func (b *promptBuilder) strings(p *fastjson.Value) {
	if p == nil {
		return
	}
	switch p.Type() {
	case fastjson.TypeString:
		b.add(p.GetStringBytes())
	case fastjson.TypeArray:
		for _, s := range p.GetArray() {
			b.add(s.GetStringBytes())
		}
	}
}

// blocks adds content that is a string or an array of content blocks: the text of each block,
// and the content of tool results (a string or blocks again, one level deep).
func (b *promptBuilder) blocks(c *fastjson.Value) {
	if c == nil {
		return
	}
	if c.Type() == fastjson.TypeString {
		b.add(c.GetStringBytes())
		return
	}
	for _, blk := range c.GetArray() {
		b.add(blk.GetStringBytes("text"))
		inner := blk.Get("content")
		if inner == nil {
			continue
		}
		if inner.Type() == fastjson.TypeString {
			b.add(inner.GetStringBytes())
			continue
		}
		for _, ib := range inner.GetArray() {
			b.add(ib.GetStringBytes("text"))
		}
	}
}
