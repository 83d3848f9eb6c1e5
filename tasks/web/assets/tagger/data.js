// Mock media library: the files as the library starts (reset() returns to it).
window.MEDIA = [
  { file: "sunset-pier.jpg", kind: "image", tags: ["sunset"], look: "linear-gradient(#ffb36b, #d9576b 50%, #2e3557)" },
  { file: "interview-01.mp4", kind: "video", tags: ["interview", "draft"], look: "linear-gradient(90deg, #5b5b6e, #a7a7b8)" },
  { file: "drone-coast.mp4", kind: "video", tags: ["aerial"], look: "linear-gradient(#9fd3e6, #2f7f9e 50%, #e9d7a5)" },
  { file: "logo-final.png", kind: "image", tags: ["brand"], look: "radial-gradient(circle, #f2c14e 30%, #fff 31%)" },
  { file: "crowd-ambience.wav", kind: "audio", tags: [], look: "repeating-linear-gradient(90deg, #789 0 4px, #fff 4px 9px)" },
  { file: "interview-02.mp4", kind: "video", tags: ["interview", "draft"], look: "linear-gradient(90deg, #6e5b5b, #b8a7a7)" },
  { file: "theme-music.mp3", kind: "audio", tags: ["music"], look: "repeating-linear-gradient(90deg, #a78 0 6px, #fff 6px 10px)" },
];
