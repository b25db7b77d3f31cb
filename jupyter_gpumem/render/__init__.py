"""Words and pictures: the status as text and HTML, explain, the policy's sentences, the sidebar's words."""
