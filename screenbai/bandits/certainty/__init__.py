"""What the data certify: the anytime certificate of an answer and a check of the model it rests on."""
