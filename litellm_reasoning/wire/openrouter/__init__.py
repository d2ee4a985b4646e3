"""OpenRouter: `reasoning_details` per upstream family (`dialect`) and their assembly from
stream chunks (`stream`)."""
