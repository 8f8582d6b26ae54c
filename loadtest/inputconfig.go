package loadtest

// InputSection is input_config.input: AIPerf's InputConfig, the dataset and the synthetic
// conversations and prompts of a run (aiperf/common/config: input_config.py,
// conversation_config.py, prompt_config.py; the newer members, such as
// dataset_sampling_strategy and the shared system prompt, are from AIPerf's later releases,
// which AIPerfCommit's models ignore). A member is left out where it has AIPerf's default, or
// where AIPerf's model would refuse llmtap's value (a fractional turn count: AIPerf's is an
// integer).
type InputSection struct {
	RandomSeed              uint64        `json:"random_seed"`
	File                    string        `json:"file,omitempty"`
	CustomDatasetType       string        `json:"custom_dataset_type,omitempty"`
	PublicDataset           string        `json:"public_dataset,omitempty"`
	DatasetSamplingStrategy string        `json:"dataset_sampling_strategy,omitempty"`
	Prompt                  *PromptConfig `json:"prompt,omitempty"`
	Conversation            *Conversation `json:"conversation,omitempty"`
}

// PromptConfig is input.prompt: here only its prefix_prompt.
type PromptConfig struct {
	PrefixPrompt PrefixPrompt `json:"prefix_prompt"`
}

// PrefixPrompt is input.prompt.prefix_prompt: --num-prefix-prompts (pool_size),
// --prefix-prompt-length (length), --shared-system-prompt-length and
// --user-context-prompt-length (AIPerf: at least 1 when given, and not beside a prefix pool).
type PrefixPrompt struct {
	PoolSize                 int  `json:"pool_size"`
	Length                   int  `json:"length"`
	SharedSystemPromptLength *int `json:"shared_system_prompt_length,omitempty"`
	UserContextPromptLength  *int `json:"user_context_prompt_length,omitempty"`
}

// Conversation is input.conversation: --conversation-num (num) and the turns.
type Conversation struct {
	Num  *int `json:"num,omitempty"`
	Turn struct {
		Mean   *int `json:"mean,omitempty"`
		Stddev *int `json:"stddev,omitempty"`
		Delay  struct {
			Mean   float64 `json:"mean"`
			Stddev float64 `json:"stddev"`
			Ratio  float64 `json:"ratio"`
		} `json:"delay"`
	} `json:"turn"`
}

// LoadgenShapes are the members of input_config.loadgen for the shapes over time and over
// runs (AIPerf's LoadGeneratorConfig of its later releases): the user-centric rate, ramps,
// warmup by duration and load, and repeated runs. Each is left out at its default (AIPerf's
// validators refuse the multi-run members beside a single run, and a ramp of 0). A sweep's
// values are not here: each run of a sweep writes its own concurrency (AIPerf's validators
// refuse parameter_sweep_* beside a single concurrency); the sweep is in run_info.flags.
type LoadgenShapes struct {
	UserCentricRate                   *float64 `json:"user_centric_rate,omitempty"`
	NumUsers                          *int     `json:"num_users,omitempty"`
	ConcurrencyRampDuration           *float64 `json:"concurrency_ramp_duration,omitempty"`
	RequestRateRampDuration           *float64 `json:"request_rate_ramp_duration,omitempty"`
	WarmupDuration                    *float64 `json:"warmup_duration,omitempty"`
	WarmupConcurrency                 *int     `json:"warmup_concurrency,omitempty"`
	WarmupRequestRate                 *float64 `json:"warmup_request_rate,omitempty"`
	WarmupConcurrencyRampDuration     *float64 `json:"warmup_concurrency_ramp_duration,omitempty"`
	WarmupRequestRateRampDuration     *float64 `json:"warmup_request_rate_ramp_duration,omitempty"`
	NumProfileRuns                    *int     `json:"num_profile_runs,omitempty"`
	ConfidenceLevel                   *float64 `json:"confidence_level,omitempty"`
	ProfileRunCooldownSeconds         *float64 `json:"profile_run_cooldown_seconds,omitempty"`
	ProfileRunDisableWarmupAfterFirst *bool    `json:"profile_run_disable_warmup_after_first,omitempty"`
}
