"""The adaptive sweep: its rungs and the decision after each rung of which arms extend."""
